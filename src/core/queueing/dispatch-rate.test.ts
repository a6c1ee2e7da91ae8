// Tests for DispatchRate (dispatch-rate.ts): the rate queued work is released at.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DispatchRate } from './dispatch-rate.ts';

/** Dispatches at `times`, each leaving requests waiting behind it. */
function backlogged(times: number[]): DispatchRate {
  const r = new DispatchRate(64, 4_000);
  for (const t of times) r.record(t, true);
  return r;
}

test('dispatch rate: unknown until 8 backlogged intervals, then intervals per ms', () => {
  const r = backlogged([0, 40, 80, 120, 160, 200, 240, 280]);
  assert.equal(r.perMs(280), undefined, '7 intervals');
  r.record(320, true);
  assert.equal(r.perMs(320), 0.025);
});

test('dispatch rate: one step of dispatches a millisecond apart is no rate', () => {
  // A replica taking a few prompts in one step, another the next: 12 dispatches in 11 ms say
  // nothing of the steps between; under a quarter second of backlog, the stand-in decides.
  const r = backlogged(Array.from({ length: 12 }, (_, i) => i));
  assert.equal(r.perMs(11), undefined);
  const steps = backlogged(Array.from({ length: 12 }, (_, i) => Math.floor(i / 3) * 50 + (i % 3)));
  assert.equal(steps.perMs(152), undefined, '4 steps, 152 ms');
  for (let i = 12; i < 24; i++) steps.record(Math.floor(i / 3) * 50 + (i % 3), true);
  assert.ok(Math.abs((steps.perMs(352) ?? 0) - 23 / 352) < 1e-9, '8 steps: 23 intervals in 352 ms');
});

test('dispatch rate: a gap with nothing waiting says nothing of capacity', () => {
  const r = new DispatchRate(64, 4_000);
  for (let t = 0; t <= 320; t += 40) r.record(t, true);
  r.record(360, false); // the queue emptied here
  r.record(1_000, true); // 640 ms idle, not a slow dispatch
  assert.equal(r.perMs(1_000), 0.025);
});

test('dispatch rate: a wave of same-millisecond dispatches reads at the rate of its backlog', () => {
  // 3 s of backlog at one dispatch per 100 ms, then 60 in one millisecond.
  const times = Array.from({ length: 31 }, (_, i) => i * 100);
  for (let i = 0; i < 60; i++) times.push(3_000 + i / 60);
  const r = backlogged(times);
  // The last 64 intervals alone: 60 near 0 and 4 of 100 ms — 64 / 401 per ms.
  // The last 4 s: 90 intervals over 3,001 ms, the slower of the two.
  const rate = r.perMs(3_001) ?? 0;
  assert.ok(Math.abs(rate - 90 / 3_001) < 1e-6, `${rate}`);
});

test('dispatch rate: after an idle stretch longer than the span the old rate is forgotten', () => {
  const r = backlogged(Array.from({ length: 20 }, (_, i) => i * 40));
  assert.equal(r.perMs(760), 0.025);
  assert.equal(r.perMs(4_100), 0.025, 'within 4 s of the last dispatches');
  assert.equal(r.perMs(4_800), undefined, 'all of them older than 4 s');
});
