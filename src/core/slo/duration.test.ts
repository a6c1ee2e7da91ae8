import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatDuration, parseDuration } from './duration.ts';

test('durations read and write back in their largest even unit', () => {
  const table: Array<[string, number | undefined, string | undefined]> = [
    ['30s', 30_000, '30s'],
    ['5m', 300_000, '5m'],
    ['60m', 3_600_000, '1h'],
    ['28d', 2_419_200_000, '28d'],
    ['36h', 129_600_000, '36h'],
    ['0m', undefined, undefined],
    ['5 m', undefined, undefined],
    ['1w', undefined, undefined],
    ['1.5h', undefined, undefined],
  ];
  for (const [text, ms, back] of table) {
    assert.equal(parseDuration(text), ms, text);
    if (ms !== undefined) assert.equal(formatDuration(ms), back, text);
  }
  assert.equal(formatDuration(1_500), '1500ms');
});
