import { test } from 'node:test';
import assert from 'node:assert/strict';
import { p99WithSlowGaps } from './gap-tolerance.ts';
import { percentileSorted } from '../observe/percentile.ts';

test('matches the percentile of the explicit multiset', () => {
  for (const n of [1, 2, 10, 50, 99, 100, 101, 129, 300, 1000]) {
    for (const slow of [0, 1, 2, 3, 5, n]) {
      const gaps = Array.from({ length: n }, (_, i) => (i >= n - Math.min(slow, n) ? 150 : 15));
      assert.ok(
        Math.abs(p99WithSlowGaps(n, slow, 15, 150) - percentileSorted(gaps, 99)) < 1e-9,
        `n=${n} slow=${slow}`,
      );
    }
  }
});

test('long answers absorb a slow step, short ones do not', () => {
  assert.ok(p99WithSlowGaps(300, 2, 15, 150) <= 80);
  assert.ok(p99WithSlowGaps(20, 1, 15, 150) > 80);
});
