import { test } from 'node:test';
import assert from 'node:assert/strict';
import { msBetween, parseAzureTimestamp } from './azure-timestamp.ts';

function ms(a: string, b: string): number {
  return msBetween(parseAzureTimestamp(a)!, parseAzureTimestamp(b)!);
}

test('keeps all seven fractional digits', () => {
  const t = parseAzureTimestamp('2023-11-16 18:15:46.6805900')!;
  assert.equal(t.nanos, 680_590_000);
  assert.equal(ms('2023-11-16 18:15:46.6805900', '2023-11-16 18:15:46.6805901'), 0.0001);
  assert.equal(ms('2023-11-16 18:15:46.6805900', '2023-11-16 18:16:47.9441270'), 61_263.537);
});

test('counts whole seconds across midnight, month ends and leap days', () => {
  assert.equal(ms('2023-11-16 23:59:59.5', '2023-11-17 00:00:00.25'), 750);
  assert.equal(ms('2023-12-31 23:00:00', '2024-01-01 01:00:00'), 7_200_000);
  assert.equal(ms('2024-02-28 00:00:00', '2024-03-01 00:00:00'), 2 * 86_400_000);
  assert.equal(ms('2023-02-28 00:00:00', '2023-03-01 00:00:00'), 86_400_000);
  assert.equal(ms('1970-01-01 00:00:00', '2023-11-16 00:00:00') / 86_400_000, 19_677);
});

test('is independent of the machine time zone (no Date involved)', () => {
  const t = parseAzureTimestamp('2023-11-16T18:15:46')!;
  assert.equal(t.seconds, Date.UTC(2023, 10, 16, 18, 15, 46) / 1000);
});

test('rejects what is not a calendar time', () => {
  for (const bad of [
    '',
    '2023-11-16',
    '2023-11-16 18:15',
    '2023-11-16 18:15:4x.1',
    '2023-13-01 00:00:00',
    '2023-02-29 00:00:00',
    '2023-04-31 00:00:00',
    '2023-11-16 24:00:00',
    '2023-11-16 18:15:46.1234567890',
    '2023-11-16 18:15:46+01:00',
  ]) {
    assert.equal(parseAzureTimestamp(bad), undefined, bad);
  }
});
