// Tests for GapFeedback (gap-feedback.ts): a late gap cuts the step share, once per hold, down to
// a floor, and the share comes back linearly. Flow control's use of it: flow-control.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_GAP_FEEDBACK, GapFeedback } from './gap-feedback.ts';

const close = (actual: number, expected: number) =>
  assert.ok(Math.abs(actual - expected) < 1e-9, `${actual} ≠ ${expected}`);

test('a host that keeps its time keeps the configured share', () => {
  const f = new GapFeedback(0.75, DEFAULT_GAP_FEEDBACK);
  assert.equal(f.share(0), 0.75);
  assert.equal(f.share(3_600_000), 0.75);
  assert.equal(f.isLate(64, 80), false, 'at 0.8 of the objective: not yet late');
  assert.equal(f.isLate(64.1, 80), true);
  assert.equal(f.isLate(1_000, Infinity), false, 'no objective, nothing is late');
});

test('a late gap cuts the share by the backoff, once per hold; it grows back 0.01 a second', () => {
  const f = new GapFeedback(0.75, DEFAULT_GAP_FEEDBACK);
  f.late(10_000);
  close(f.share(10_000), 0.675);
  // The same late turn makes many streams late: one cut for all of them.
  f.late(10_000);
  f.late(10_999);
  close(f.share(10_999), 0.675 + 0.00999);
  assert.deepEqual([f.lateGaps, f.cuts], [3, 1]);
  // A hold later, the next cut multiplies what was regained by then.
  f.late(11_000);
  close(f.share(11_000), (0.675 + 0.01) * 0.9);
  // Quiet: back linearly, never past the configured share.
  close(f.share(21_000), 0.6165 + 0.1);
  assert.equal(f.share(100_000), 0.75);
});

test('cuts stop at the floor: half the configured share', () => {
  const f = new GapFeedback(0.8, DEFAULT_GAP_FEEDBACK);
  for (let t = 0; t < 60_000; t += 1_000) f.late(t);
  close(f.share(59_000), 0.4);
  assert.equal(f.cuts, 60);
});
