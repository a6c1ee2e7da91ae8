import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isInputError } from '../../core/errors.ts';
import { lengthTable, parseShareGptLengths } from './sharegpt-lengths.ts';
import { mean } from './test-stats.ts';

test('sharegpt-sarathi holds the 30,731 Sarathi-Serve pairs with the source means', () => {
  const t = lengthTable('sharegpt-sarathi');
  assert.equal(t.rows, 30_731);
  assert.equal(t.input.length, t.rows);
  assert.equal(t.output.length, t.rows);
  // Means from the raw file's STATS.txt: input 2340.0, output 438.7.
  assert.equal(mean(t.input).toFixed(1), '2340.0');
  assert.equal(mean(t.output).toFixed(1), '438.7');
  // The first row of the raw CSV is 74,918.
  assert.equal(t.input[0], 74);
  assert.equal(t.output[0], 918);
  assert.equal(lengthTable('sharegpt-sarathi'), t, 'loaded once');
});

test('sharegpt-vllm is its own table, within the filter vLLM bench applies', () => {
  const t = lengthTable('sharegpt-vllm');
  assert.notEqual(t, lengthTable('sharegpt-sarathi'));
  assert.equal(lengthTable('sharegpt-vllm'), t, 'loaded once');
  assert.ok(t.rows > 29_000, `${t.rows} rows`);
  for (let i = 0; i < t.rows; i++) {
    const [p, o] = [t.input[i], t.output[i]];
    assert.ok(p >= 4 && o >= 4 && p <= 1024 && p + o <= 2048, `row ${i}: ${p}, ${o}`);
  }
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
