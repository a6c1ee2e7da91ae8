import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RunLengthSamples } from './run-length-samples.ts';
import { SeededRng } from '../../runtime/seeded-rng.ts';
import { summarize, type Summary } from '../stats/percentile.ts';

/** The same summary from every sample, expanded and sorted: what the runs must reproduce. */
function expanded(samples: readonly number[], exclude: readonly number[]): Summary {
  const left = [...samples];
  for (const x of exclude) left.splice(left.indexOf(x), 1);
  return summarize(left);
}

function check(samples: readonly number[], exclude: readonly number[] = []): void {
  const runs = new RunLengthSamples();
  for (const x of samples) runs.add(x);
  const got = runs.summarize(exclude);
  const want = expanded(samples, exclude);
  for (const k of ['p50', 'p90', 'p99', 'max', 'count'] as const) assert.equal(got[k], want[k], k);
  assert.ok(Math.abs(got.mean - want.mean) <= 1e-9 * Math.max(1, Math.abs(want.mean)), 'mean');
}

test('percentiles over runs equal those over every sample, across scales and ties', () => {
  const rng = new SeededRng(11);
  // Token gaps: runs of one step's gap, spread over milliseconds to seconds.
  const gaps: number[] = [];
  for (let i = 0; i < 4000; i++) {
    const gap = 5 + rng.next() * rng.next() * 2000;
    for (let k = 1 + Math.floor(rng.next() * 8); k > 0; k--) gaps.push(gap);
  }
  check(gaps);
  check(gaps, [gaps[3], gaps[3], gaps[500], gaps[3999]]);
  // A handful of distinct values, zero among them, far apart.
  check([0, 0, 1e-9, 3, 3, 3, 1e6, 1e6, 7.5, 0.25]);
  check([42]);
  check([2, 2, 2, 2], [2]);
});

test('values of either sign, and -0 beside 0, are ordered and found exactly', () => {
  check([-3, -1, -1, 0, 2, 5, 5]);
  check([-0, 0, 1, 1, 4], [0]);
  check([-1e-300, 1e300, 7]);
});

test('runs added with counts, across chunks, in any order: the same summary as every sample', () => {
  const rng = new SeededRng(5);
  const runs = new RunLengthSamples();
  const samples: number[] = [];
  // Enough runs to fill several chunks; values from −50 to 10,000 with repeats far apart.
  const pool = Array.from({ length: 3000 }, () => (rng.next() - 0.005) * 10_000);
  for (let i = 0; i < 150_000; i++) {
    const v = pool[Math.floor(rng.next() * pool.length)];
    const c = 1 + Math.floor(rng.next() * 4);
    runs.add(v, c);
    for (let k = 0; k < c; k++) samples.push(v);
  }
  const exclude = [pool[0], pool[1], pool[1], samples[10], samples.at(-1) as number];
  const got = runs.summarize(exclude);
  const want = expanded(samples, exclude);
  for (const k of ['p50', 'p90', 'p99', 'max', 'count'] as const) assert.equal(got[k], want[k], k);
  assert.ok(Math.abs(got.mean - want.mean) <= 1e-9 * Math.abs(want.mean), 'mean');
});

test('values one unit in the last place apart are told apart', () => {
  const rng = new SeededRng(9);
  // 1 + k ulp for k in a shuffled order, some repeated: every bit of the double decides.
  const samples = Array.from(
    { length: 5000 },
    () => 1 + Math.floor(rng.next() * 70_000) * Number.EPSILON,
  );
  check(samples, [samples[0], samples[17]]);
  check(samples.map((x) => -x));
});
