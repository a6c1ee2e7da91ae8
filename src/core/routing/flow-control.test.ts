// Tests for FlowControl (flow-control.ts): how many requests alike a replica holds, with and
// without a new prompt chunk in the step, and the adapter slots a batch has.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FlowControl } from './flow-control.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';
import { ReplicaLedger, type LedgerEntry } from '../fleet/replica-ledger.ts';

/** A decode step of 10 ms plus 1 ms per sequence; context costs nothing. */
const spec: FleetSpec = {
  model: 'm',
  adapters: [],
  maxModelLen: 8_192,
  maxBatchedTokens: 8_192,
  maxNumSeqs: 256,
  kvBytesPerToken: 1_000,
  replicaKvTokens: 1_000_000,
  stepTime: { stepMs: (s) => 10 + s.decodeSeqs + s.prefillSeqs },
};
const flow = (o: Partial<FleetSpec> = {}) =>
  new FlowControl(
    { ...spec, ...o },
    { itlMarginRatio: 0.1, relayGapRatio: 0, kvReserveRatio: 0.1, stallRisk: 0.5 },
  );

test('steady batch: the step budget binds — 10 + B ≤ 0.9 × 80 gives 62', () => {
  assert.equal(flow().steadyBatch(80, 1_000, 1_000), 62);
  assert.equal(flow().steadyBatch(11.2, 1_000, 1_000), 1, 'not even one fits: still 1');
});

test("steady batch: the relay's share of the gap is kept free too — 10 + B ≤ 0.75 × 80 gives 50", () => {
  const relayed = new FlowControl(spec, {
    itlMarginRatio: 0.1,
    relayGapRatio: 0.15,
    kvReserveRatio: 0.1,
    stallRisk: 0.5,
  });
  assert.equal(relayed.gapShare, 0.75);
  assert.equal(relayed.steadyBatch(80, 1_000, 1_000), 50);
});

test('steady batch: sequence slots and KV bind when they are tighter', () => {
  assert.equal(flow().steadyBatch(Infinity, 1_000, 1_000), 256, 'no objective: the slots');
  assert.equal(flow({ maxNumSeqs: 32 }).steadyBatch(80, 1_000, 1_000), 32);
  // 0.9 × 1,000,000 KV tokens at 20,000 a request.
  assert.equal(flow().steadyBatch(80, 1_000, 20_000), 45);
});

test('steady batch: a step that also carries a new prompt chunk holds fewer streams', () => {
  // The step model here charges 1 ms per prefilling sequence: 10 + B + 1 ≤ 72 gives 61.
  assert.equal(flow().steadyBatch(80, 1_000, 1_000, 2_000), 61);
  // A tenth of a ms a prefill token: a 500-token chunk leaves 72 − 10 − 50 = 12 streams.
  const heavy = flow({ stepTime: { stepMs: (s) => 10 + s.decodeSeqs + s.prefillTokens / 10 } });
  assert.equal(heavy.steadyBatch(80, 1_000, 1_000, 500), 12);
  assert.equal(heavy.steadyBatch(80, 1_000, 1_000), 62);
});

test('a batch holds max_loras distinct adapters: a third waits until one of them has left', () => {
  const ledger = new ReplicaLedger(1);
  const a = ledger.replicas[0];
  const entry = (adapter?: string): LedgerEntry => ({
    replica: 0,
    promptTokens: 100,
    kvTokens: 200,
    itlSloMs: 80,
    lengths: undefined,
    capTokens: 100,
    expectTokens: 100,
    adapter,
    streamed: 0,
    slowGaps: 0,
    slot: -1,
    spanFromMs: 0,
    spanFromToken: 0,
    spanProfileMs: 0,
  });
  const c = (adapter?: string) => ({ promptTokens: 100, kvTokens: 200, itlSloMs: 80, adapter });
  const two = flow({ maxLoras: 2 });
  const sql = [entry('sql'), entry('sql')];
  for (const e of [...sql, entry('chat'), entry()]) ledger.add(e);
  assert.deepEqual(
    [...a.adapters],
    [
      ['sql', 2],
      ['chat', 1],
    ],
  );
  assert.equal(two.holds(a, c('sql'), 0), true, 'its adapter already runs there');
  assert.equal(two.holds(a, c(), 0), true, 'the base model takes no slot');
  assert.equal(two.holds(a, c('code'), 0), false, 'both slots taken');
  assert.equal(two.fit(a, c('code'), 0, 0).kind, 'no');
  assert.equal(flow({ maxLoras: 3 }).holds(a, c('code'), 0), true, 'a third slot');
  ledger.remove(sql[0]);
  assert.equal(two.holds(a, c('code'), 0), false, 'sql still runs there');
  ledger.remove(sql[1]);
  assert.equal(two.holds(a, c('code'), 0), true, 'sql has left: its slot is free');
});
