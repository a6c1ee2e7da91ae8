// The KV a replica holds and has free: its own report of its cache where it gives one (vLLM's
// cache_config_info), else the fleet spec's; and the routing that weighs it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  kvCapacityOf,
  kvUsedOf,
  largestKv,
  mostFreeKv,
  type ReplicaSnapshot,
} from './replica-snapshot.ts';
import { ReplicaLedger } from './replica-ledger.ts';
import { SCORERS } from '../routing/scorers.ts';
import { ledgerEntry, routeFleet, routeRequest } from '../routing/routing-test-kit.ts';

const spec = { replicaKvTokens: 100_000 };

function replica(index: number, kvUsage: number, kvCapacityTokens?: number): ReplicaSnapshot {
  return {
    index,
    inFlight: 0,
    running: 0,
    waiting: 0,
    kvUsage,
    ...(kvCapacityTokens === undefined ? {} : { kvCapacityTokens }),
  };
}

test("a replica's KV: its own cache where it says, in use the larger of reserved and reported", () => {
  assert.equal(kvCapacityOf({}, spec), 100_000);
  assert.equal(kvCapacityOf({ kvCapacityTokens: 30_000 }, spec), 30_000);
  assert.equal(kvUsedOf({ kvUsage: 0.5, kvCapacityTokens: 30_000 }, 10_000, spec), 15_000);
  assert.equal(kvUsedOf({ kvUsage: 0.5 }, 60_000, spec), 60_000);
});

test("the fleet's KV: the most a replica has free and the largest cache, each by its own size", () => {
  const ledger = new ReplicaLedger(3);
  ledger.add(ledgerEntry({ replica: 2, kvTokens: 50_000 }));
  const fleet = [replica(0, 0.5), replica(1, 0.1, 20_000), replica(2, 0, 400_000)];
  assert.equal(mostFreeKv(fleet, ledger, spec), 350_000, '400,000 less the 50,000 reserved');
  assert.equal(mostFreeKv(fleet.slice(0, 2), ledger, spec), 50_000);
  assert.equal(largestKv(fleet, spec), 400_000);
  assert.equal(largestKv([fleet[1]], spec), 20_000, 'smaller than the spec: its own');
  assert.equal(largestKv([], spec), 100_000, 'none ready: the spec');
});

test('kv-pressure: the same request weighs more on a smaller cache', () => {
  const { replicas, ctx } = routeFleet([0, 0]);
  const r = routeRequest({ inputTokens: 1_000 });
  const pressure = SCORERS['kv-pressure'];
  const small = pressure.score(r, { ...replicas[0], kvCapacityTokens: 10_000 }, ctx);
  const big = pressure.score(r, { ...replicas[1], kvCapacityTokens: 1_000_000 }, ctx);
  assert.equal(small, r.demand.kvTokens / 10_000);
  assert.equal(big, r.demand.kvTokens / 1_000_000);
});
