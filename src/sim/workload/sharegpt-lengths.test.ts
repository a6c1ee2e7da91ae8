import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isInputError } from '../../core/errors.ts';
import { parseShareGptLengths, shareGptLengths } from './sharegpt-lengths.ts';
import { mean } from './test-stats.ts';

test('the committed table holds the 30,731 ShareGPT pairs with the source means', () => {
  const t = shareGptLengths();
  assert.equal(t.rows, 30_731);
  assert.equal(t.input.length, t.rows);
  assert.equal(t.output.length, t.rows);
  // Means from the raw file's STATS.txt: input 2340.0, output 438.7.
  assert.equal(mean(t.input).toFixed(1), '2340.0');
  assert.equal(mean(t.output).toFixed(1), '438.7');
  // The first row of the raw CSV is 74,918.
  assert.equal(t.input[0], 74);
  assert.equal(t.output[0], 918);
  assert.equal(shareGptLengths(), t, 'loaded once');
});

test('a malformed table is an InputError naming the column', () => {
  const bad = [
    ['{"input": [1, 2], "output": [3]}', 'output'],
    ['{"input": [1, 0], "output": [3, 4]}', 'input[1]'],
    ['{"output": [3]}', 'input'],
  ] as const;
  for (const [text, field] of bad) {
    assert.throws(
      () => parseShareGptLengths(text, 'x.json'),
      (e) => isInputError(e) && e.field === field,
    );
  }
});
