// What an autoscaler host counts between ticks (scale-window.ts): rates over the tick, misses,
// a mix smoothed across ticks and kept through empty ones; and the model's group capacity,
// which falls as requests grow and never holds more streams than flow control allows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ScaleWindow, groupCapacity, missedForCapacity, windowRates } from './scale-window.ts';
import type { RejectReason } from '../request/decision.ts';
import { FlowControl } from '../routing/flow-control.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';

test('a tick: arrivals, good completions and misses (refused or late) per second', () => {
  const w = new ScaleWindow();
  for (let i = 0; i < 10; i++) w.arrived(100);
  for (let i = 0; i < 4; i++) w.completed(50, i < 3);
  w.refused();
  const r = w.take(5_000);
  assert.deepEqual(
    { arrivalRps: r.arrivalRps, goodRps: r.goodRps, missedRps: r.missedRps },
    { arrivalRps: 2, goodRps: 0.6, missedRps: 0.4 },
  );
  assert.deepEqual(r.mix, { input: 100, output: 50 });
  const next = w.take(5_000);
  assert.equal(next.arrivalRps, 0, 'the counts start again');
  assert.deepEqual(next.mix, { input: 100, output: 50 }, 'the mix is kept through an empty tick');
});

test('a request refused unread is an arrival that leaves the mix alone', () => {
  const w = new ScaleWindow();
  w.arrived(100);
  w.arrived(null);
  w.arrived(null);
  w.completed(50, true);
  const r = w.take(1_000);
  assert.equal(r.arrivalRps, 3);
  assert.deepEqual(r.mix, { input: 100, output: 50 });
});

test('the mix moves toward new requests over several ticks, not at once', () => {
  const w = new ScaleWindow();
  assert.equal(w.take(5_000).mix, null, 'nothing completed: no mix');
  w.arrived(100);
  w.completed(100, true);
  w.take(5_000);
  w.arrived(1_000);
  w.completed(1_000, true);
  const m = w.take(5_000).mix;
  assert.ok(m !== null && m.input > 100 && m.input < 1_000, JSON.stringify(m));
});

test("two hosts' shares add up to the fleet's tick: rates summed, the mix weighted by requests", () => {
  const a = new ScaleWindow();
  const b = new ScaleWindow();
  const fleet = new ScaleWindow();
  for (const [w, input, output, n] of [
    [a, 100, 50, 6],
    [b, 1_000, 400, 2],
  ] as const) {
    for (let i = 0; i < n; i++) {
      w.arrived(input);
      w.completed(output, i > 0);
      fleet.arrived(input);
      fleet.completed(output, i > 0);
    }
  }
  b.refused();
  fleet.refused();
  const rates = windowRates([a.share(2_000), b.share(2_000)]);
  assert.deepEqual(rates, fleet.take(2_000));
  assert.deepEqual(rates, {
    arrivalRps: 4,
    goodRps: 3,
    missedRps: 1.5,
    mix: { input: 325, output: 137.5 },
  });
});

const spec: FleetSpec = {
  model: 'm',
  adapters: [],
  maxModelLen: 32_768,
  maxBatchedTokens: 2_048,
  maxNumSeqs: 256,
  kvBytesPerToken: 1_000,
  replicaKvTokens: 500_000,
  // 8 ms a step, 0.1 ms a sequence, 0.02 ms a prompt token.
  stepTime: { stepMs: (s) => 8 + 0.1 * (s.decodeSeqs + s.prefillSeqs) + 0.02 * s.prefillTokens },
};
const flow = new FlowControl(spec, {
  itlMarginRatio: 0.1,
  relayGapRatio: 0,
  kvReserveRatio: 0.1,
  stallRisk: 0.5,
});

test('group capacity: the rate falls as prompts and outputs grow; the streams fit the step budget', () => {
  const small = groupCapacity(flow, 80, 500, 100);
  const long = groupCapacity(flow, 80, 4_000, 100);
  const chatty = groupCapacity(flow, 80, 500, 1_000);
  assert.ok(
    small.rps > long.rps && small.rps > chatty.rps,
    JSON.stringify({ small, long, chatty }),
  );
  assert.ok(small.streams <= flow.steadyBatch(80, 550, 600), String(small.streams));
  // 80% of the group's time over what one request costs it: prefill, then its share of the steps.
  const step = flow.decodeStepMs(small.streams, small.streams * 550);
  const cost = flow.prefillMs(500) + (100 * step) / small.streams;
  assert.ok(Math.abs(small.rps - 800 / cost) < 1e-9);
});

test('group capacity at a measured pace: replicas twice as slow hold fewer streams and serve under half', () => {
  const profiled = groupCapacity(flow, 80, 500, 100);
  const slow = groupCapacity(flow, 80, 500, 100, 500, 2);
  assert.ok(slow.streams < profiled.streams, JSON.stringify({ profiled, slow }));
  assert.ok(slow.rps < profiled.rps / 2, JSON.stringify({ profiled, slow }));
  // Each of its steps at twice the profile's, within the same gap budget.
  assert.ok(2 * flow.decodeStepMs(slow.streams, slow.streams * 550) <= 0.9 * 80);
});

test("a miss the fleet's size answers for: a capacity refusal or an expiry, not a tenant's own limit", () => {
  const said = (result: string, reason: RejectReason | null) =>
    missedForCapacity({ admission: { result, reason } });
  assert.equal(said('reject', 'deadline'), true);
  assert.equal(said('reject', 'kv_capacity'), true);
  assert.equal(said('expire', 'deadline'), true);
  assert.equal(said('reject', 'tenant_tokens'), false);
  assert.equal(said('reject', 'context_length'), false);
  assert.equal(said('reject', 'shutting_down'), false);
  assert.equal(said('admit', null), false);
});
