// Tests for replica-holds.ts: what the replicas hold is counted replica by replica, each within
// its own KV cache — a fleet of a large and a small cache is not two large ones.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FlowControl } from '../routing/flow-control.ts';
import { ReplicaLedger } from '../fleet/replica-ledger.ts';
import type { ReplicaSnapshot } from '../fleet/replica-snapshot.ts';
import { ledgerEntry, stepSpec } from '../routing/routing-test-kit.ts';
import { heldAtPace, holdAlike, kvSlotsShort } from './replica-holds.ts';

/** A decode step of 10 ms plus 1 ms per sequence; 1M KV tokens a replica unless it says. */
const spec = stepSpec((s) => 10 + s.decodeSeqs + s.prefillSeqs);
const flow = new FlowControl(spec, {
  itlMarginRatio: 0.1,
  relayGapRatio: 0,
  kvReserveRatio: 0.1,
  stallRisk: 0.5,
});

const replica = (index: number, kvCapacityTokens?: number): ReplicaSnapshot => ({
  index,
  inFlight: 0,
  running: 0,
  waiting: 0,
  kvUsage: 0,
  ...(kvCapacityTokens === undefined ? {} : { kvCapacityTokens }),
});

test('requests alike: each replica holds what its own cache does', () => {
  // 0.9 × 1,000,000 at 20,000 a request: 45; 0.9 × 100,000: 4.
  const ask = { kvTokens: 20_000 };
  assert.equal(holdAlike(flow, [replica(0), replica(1)], Infinity, 1_000, ask), 90);
  assert.equal(holdAlike(flow, [replica(0), replica(1, 100_000)], Infinity, 1_000, ask), 49);
  // Two choices a request, each a stream of 10,000: 90 streams, 45 requests; 9 streams, 4.
  const two = { kvTokens: 20_000, seqs: 2 };
  assert.equal(holdAlike(flow, [replica(0), replica(1, 100_000)], Infinity, 1_000, two), 49);
  // A cache too small for even one still holds one: the engine queues what it cannot run.
  assert.equal(holdAlike(flow, [replica(0, 10_000)], Infinity, 1_000, ask), 1);
});

test('streams at pace: the gap budget, not the cache, bounds the streams a step carries', () => {
  const ledger = new ReplicaLedger(2);
  // 10 + B ≤ 0.9 × 80 gives 62 a replica, whatever its cache: KV is counted apart.
  assert.equal(heldAtPace(flow, ledger, [replica(0), replica(1, 30_000)], 80, 1_000, 0), 124);
});

test('KV places: a request the small replica cannot take waits on the large one', () => {
  const ledger = new ReplicaLedger(2);
  ledger.add(ledgerEntry({ replica: 0, kvTokens: 880_000 }));
  // Replica 0: 900,000 − 880,000 = 20,000 free; replica 1, its own 100,000: 90,000 free.
  const fleet = [replica(0), replica(1, 100_000)];
  // 10,000 a place: 2 + 9 = 11 places; this one of 50,000 takes 5 of replica 1's 9.
  assert.equal(kvSlotsShort(flow, ledger, fleet, 0, 50_000, 10_000), -11 + 5);
  assert.equal(kvSlotsShort(flow, ledger, fleet, 10, 50_000, 10_000), 10 - 11 + 5);
  // Planned at the fleet's 1M, replica 1 had 90 places: a wait of 10 ahead was promised none.
  assert.equal(
    kvSlotsShort(flow, ledger, [replica(0), replica(1)], 10, 50_000, 10_000),
    10 - 92 + 5,
  );
  // Neither holds 100,000: something must end first.
  assert.equal(kvSlotsShort(flow, ledger, fleet, 0, 100_000, 10_000), 1);
});
