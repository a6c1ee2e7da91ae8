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

test('values the bucket index cannot order (negative, -0) are still found exactly', () => {
  check([-3, -1, -1, 0, 2, 5, 5]);
  check([-0, 0, 1, 1, 4], [0]);
  check([-1e-300, 1e300, 7]);
});
