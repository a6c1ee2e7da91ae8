import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  gapsToSpare,
  p99WithSlowGaps,
  stallRisk,
  stepsUntilSpare,
  type StreamAtRisk,
} from './gap-tolerance.ts';
import { percentileSorted } from '../stats/percentile.ts';

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

test('gapsToSpare: the fewest gaps whose p99 ignores that many slow ones', () => {
  assert.deepEqual([0, 1, 2, 3].map(gapsToSpare), [0, 102, 202, 302]);
  for (const slow of [1, 2, 3, 5]) {
    const n = gapsToSpare(slow);
    // From there on the slow gaps never reach the p99 (one fewer can, at an exact rank, too).
    for (let k = n; k < n + 300; k++) assert.equal(p99WithSlowGaps(k, slow, 15, 500), 15, `${k}`);
    assert.ok(p99WithSlowGaps(n - 2, slow, 15, 500) > 15, `n=${n - 2} does not`);
  }
});

test('stallRisk: the chance a stream ends before it can spare the stall', () => {
  // Outputs uniformly 1..200 tokens: P(length ≤ x) = x / 200.
  const uniform = { cdf: (x: number) => Math.max(0, Math.min(1, x / 200)) };
  const rows: Array<
    [streamed: number, slow: number, cap: number, lengths: typeof uniform | undefined, risk: number]
  > = [
    [103, 1, 1_000, uniform, 0], // already has the gaps
    [0, 1, 1_000, undefined, 1], // nothing known of its class
    [10, 1, 50, uniform, 1], // its cap ends it first
    [1, 1, 1_000, uniform, 102 / 200], // P(L ≤ 102)
    [51, 1, 1_000, uniform, (102 - 50) / 150], // P(51 ≤ L ≤ 102 | L ≥ 51)
    [250, 2, 1_000, uniform, 0], // 202 gaps spare two
    [201, 3, 1_000, uniform, 0.5], // longer than every length seen: unknown
  ];
  for (const [streamed, slow, cap, lengths, risk] of rows) {
    assert.ok(
      Math.abs(stallRisk(streamed, slow, cap, lengths) - risk) < 1e-12,
      `${streamed} ${slow}`,
    );
  }
});

test('stepsUntilSpare: the steps until the streams could take a stall, nothing new joining', () => {
  const uniform = { cdf: (x: number) => Math.max(0, Math.min(1, x / 200)) };
  const stream = (streamed: number, o: Partial<StreamAtRisk> = {}): StreamAtRisk => ({
    streamed,
    slowGaps: 0,
    capTokens: 1_000,
    lengths: undefined,
    seqs: 1,
    itlSloMs: 80,
    ...o,
  });
  // Unknown lengths: every stream must reach its 103rd token (one slow gap spared), or its cap.
  assert.equal(stepsUntilSpare([stream(21), stream(90)], 1, 0.5), 82);
  assert.equal(stepsUntilSpare([stream(21, { capTokens: 40 }), stream(90)], 1, 0.5), 19);
  assert.equal(stepsUntilSpare([stream(21, { slowGaps: 1 })], 1, 0.5), 203 - 21);
  assert.equal(stepsUntilSpare([stream(21, { itlSloMs: Infinity })], 1, 0.5), 0);
  assert.equal(stepsUntilSpare([stream(150), stream(0, { itlSloMs: Infinity })], 1, 0.5), 0);
  // Two choices of one request are two streams: 2 > 1.5 until it is far enough.
  assert.equal(stepsUntilSpare([stream(100, { seqs: 2 })], 1, 1.5), 3);
  // Known lengths: the expected streams still running and short of the gaps, P(s + k ≤ L ≤ 102
  // | L ≥ s), summed — the least k where that is within the limit, as a scan finds it.
  const streams = [0, 10, 30, 60].map((s) => stream(s, { lengths: uniform }));
  const risk = (k: number) =>
    streams.reduce(
      (sum, e) => sum + Math.max(0, 102 - (e.streamed + k) + 1) / (200 - e.streamed + 1),
      0,
    );
  for (const limit of [0.1, 0.5, 1, 2]) {
    let k = 0;
    while (risk(k) > limit + 1e-12) k++;
    assert.equal(stepsUntilSpare(streams, 1, limit), k, `limit ${limit}`);
  }
});

test('stepsUntilSpare: a stream with no cap, asked for more stalls than any length hides: never', () => {
  const uncapped = {
    streamed: 5,
    slowGaps: 0,
    capTokens: Infinity,
    lengths: undefined,
    seqs: 1,
    itlSloMs: 80,
  };
  assert.equal(stepsUntilSpare([uncapped], 33, 0.5), Infinity);
  // Within the stalls a length can hide, the steps to its gaps: 3,203 tokens for 32.
  assert.equal(stepsUntilSpare([uncapped], 32, 0.5), 3_203 - 5);
});
