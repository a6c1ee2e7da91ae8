import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TailSamples } from './tail-samples.ts';
import { percentileSorted } from '../stats/percentile.ts';

test('p99 from the kept tail equals the full-sort p99 for every count up to the bound', () => {
  let x = 12345;
  const next = () => ((x = (x * 1103515245 + 12345) % 2147483648) % 1000) / 7;
  for (const bound of [1, 2, 5, 99, 100, 101, 437, 1000, 2500]) {
    for (const n of new Set([1, 2, Math.max(1, bound >> 1), bound].filter((k) => k <= bound))) {
      const t = new TailSamples(bound);
      const all: number[] = [];
      let offered = 0;
      for (let i = 0; i < n; i++) {
        const v = next();
        if (v > t.floor) {
          t.add(v);
          offered++;
        }
        all.push(v);
      }
      all.sort((a, b) => a - b);
      assert.equal(t.p99(n), percentileSorted(all, 99), `bound ${bound}, n ${n}`);
      assert.equal(t.max, all[all.length - 1]);
      if (n > 50) assert.ok(offered < n, 'the floor filters samples');
    }
  }
});

test('no samples: NaN and max 0', () => {
  const t = new TailSamples(10);
  assert.ok(Number.isNaN(t.p99(0)));
  assert.equal(t.max, 0);
});
