import { test } from 'node:test';
import assert from 'node:assert/strict';
import { percentileSorted, summarize } from './percentile.ts';
import { RunLengthSamples } from '../observe/run-length-samples.ts';

test('percentiles match numpy linear interpolation', () => {
  // numpy.percentile([1,2,3,4], [50, 90, 99]) = [2.5, 3.7, 3.97]
  const s = [1, 2, 3, 4];
  assert.equal(percentileSorted(s, 50), 2.5);
  assert.ok(Math.abs(percentileSorted(s, 90) - 3.7) < 1e-12);
  assert.ok(Math.abs(percentileSorted(s, 99) - 3.97) < 1e-12);
  assert.equal(percentileSorted([7], 99), 7);
  assert.ok(Number.isNaN(percentileSorted([], 50)));
});

test('summarize sorts and reports zeros for no samples', () => {
  const s = summarize([5, 1, 3]);
  assert.deepEqual([s.mean, s.p50, s.max, s.count], [3, 3, 5, 3]);
  assert.deepEqual(summarize([]), { mean: 0, p50: 0, p90: 0, p99: 0, max: 0, count: 0 });
});

test('run-length samples give the same percentiles as the expanded list', () => {
  const expanded: number[] = [];
  const rl = new RunLengthSamples();
  let x = 17;
  for (let i = 0; i < 5000; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    const value = (x % 97) / 3;
    const count = 1 + (x % 5);
    rl.add(value, count);
    for (let c = 0; c < count; c++) expanded.push(value);
  }
  const a = rl.summarize();
  const b = summarize(expanded);
  for (const k of ['mean', 'p50', 'p90', 'p99', 'max', 'count'] as const) {
    assert.ok(Math.abs(a[k] - b[k]) < 1e-9, `${k}: ${a[k]} vs ${b[k]}`);
  }
});

test('run-length samples exclude what they are told to', () => {
  const rl = new RunLengthSamples();
  for (const v of [1, 2, 2, 3, 10]) rl.add(v);
  const s = rl.summarize([10, 2]);
  assert.deepEqual(s, summarize([1, 2, 3]));
});

test('run-length samples stay exact across chunk boundaries', () => {
  const rl = new RunLengthSamples();
  const expanded: number[] = [];
  for (let i = 0; i < 200_000; i++) {
    const value = (i * 7919) % 100_003;
    const count = 1 + (i % 3);
    rl.add(value, count);
    for (let c = 0; c < count; c++) expanded.push(value);
  }
  assert.deepEqual(rl.summarize(), summarize(expanded));
});
