// Tests for drainRetryAfterMs (retry-after.ts): rounding, clamping and monotonicity.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { drainRetryAfterMs } from './retry-after.ts';

const retryCases: [drainMs: number, minMs: number, maxMs: number, want: number][] = [
  [0, 1_000, 30_000, 1_000],
  [-500, 1_000, 30_000, 1_000],
  [999, 1_000, 30_000, 1_000],
  [1_000, 1_000, 30_000, 1_000],
  [1_000.5, 1_000, 30_000, 1_100],
  [1_001, 1_000, 30_000, 1_100],
  [12_345, 1_000, 30_000, 12_400],
  [29_901, 1_000, 30_000, 30_000],
  [30_001, 1_000, 30_000, 30_000],
  [1e9, 1_000, 30_000, 30_000],
  [Infinity, 1_000, 30_000, 30_000],
  [0, 0, 30_000, 0],
  [1, 0, 30_000, 100],
  [150, 0, 30_000, 200],
];

for (const [drainMs, minMs, maxMs, want] of retryCases) {
  test(`drainRetryAfterMs(${drainMs}, ${minMs}, ${maxMs}) = ${want}`, () => {
    assert.equal(drainRetryAfterMs(drainMs, minMs, maxMs), want);
  });
}

test('drainRetryAfterMs never shrinks as the drain grows, and never falls short of it', () => {
  for (const [minMs, maxMs] of [
    [1_000, 30_000],
    [0, 5_000],
  ]) {
    let last = -Infinity;
    for (let drainMs = -1_000; drainMs <= 40_000; drainMs += 37.5) {
      const r = drainRetryAfterMs(drainMs, minMs, maxMs);
      const at = `drain ${drainMs}, bounds [${minMs}, ${maxMs}]`;
      assert.ok(r >= last, `${at}: ${r} < ${last}`);
      assert.ok(r >= minMs && r <= maxMs, `${at}: ${r} out of bounds`);
      assert.equal(r % 100, 0, `${at}: ${r} not a multiple of 100`);
      assert.ok(r >= Math.min(drainMs, maxMs), `${at}: ${r} before the queue drains`);
      last = r;
    }
    assert.equal(last, maxMs);
  }
});
