/**
 * Fixtures for routing tests: a fleet of replica snapshots with a ledger whose accounts match
 * them (in-flight requests decoding, KV reserved), a route context over it, requests, and the
 * ledger entry of one.
 */
import { SPEC } from '../admission/admission-test-kit.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';
import type { StepShape } from '../ports/step-time.ts';
import { ReplicaLedger, type LedgerEntry } from '../fleet/replica-ledger.ts';
import type { ReplicaSnapshot } from '../fleet/replica-snapshot.ts';
import { DEFAULT_SLO_CLASSES } from '../request/slo-classes.ts';
import type { LlmRequest } from '../request/request.ts';
import { FlowControl } from './flow-control.ts';
import type { RouteContext, RouteRequest } from './route.ts';

export function routeRequest(o: Partial<LlmRequest> = {}, avoid = -1): RouteRequest {
  const req: LlmRequest = {
    id: 'r',
    arrivalMs: 0,
    inputTokens: 200,
    outputTokens: 50,
    tenant: 't',
    sloClass: 'interactive',
    ...o,
  };
  return {
    req,
    demand: {
      kvTokens: req.inputTokens + 100,
      prefixHitTokens: 0,
      output: { p10: 20, p50: 100, p90: 300, source: 'prior' },
    },
    cls: DEFAULT_SLO_CLASSES[req.sloClass],
    avoid,
  };
}

/**
 * Replicas with `loads[i]` requests in flight on replica i, each a decoding stream of 500
 * tokens of context reserving 1,000 KV tokens; `kvUsage` as the engine would report it.
 */
export interface RouteFleet {
  replicas: ReplicaSnapshot[];
  ctx: RouteContext & { nowMs: number };
}

export function routeFleet(loads: readonly number[], spec: FleetSpec = SPEC): RouteFleet {
  const ledger = new ReplicaLedger(loads.length);
  loads.forEach((n, replica) => {
    for (let k = 0; k < n; k++) {
      const e = ledgerEntry({
        replica,
        promptTokens: 500,
        kvTokens: 1_000,
        itlSloMs: 100,
        capTokens: 1_000,
        expectTokens: 200,
      });
      ledger.add(e);
      ledger.firstToken(e, 0);
    }
  });
  const replicas = loads.map((n, index) => ({
    index,
    inFlight: n,
    running: n,
    waiting: 0,
    kvUsage: Math.min(1, (n * 1_000) / spec.replicaKvTokens),
  }));
  const flow = new FlowControl(spec, {
    itlMarginRatio: 0.1,
    relayGapRatio: 0,
    kvReserveRatio: 0.05,
    stallRisk: 0.5,
  });
  const ctx = {
    nowMs: 0,
    spec,
    ledger,
    flow,
    hits: new Float64Array(loads.length),
    heldFor: () => undefined,
    cachedBlocks: () => 0,
  };
  return { replicas, ctx };
}

/** `r` was dispatched to replica `index`: the ledger and the snapshot show it in flight. */
export function occupy(fleet: RouteFleet, index: number, promptTokens = 200): void {
  fleet.ctx.ledger.add(
    ledgerEntry({
      replica: index,
      promptTokens,
      kvTokens: promptTokens + 100,
      itlSloMs: 100,
      capTokens: 1_000,
    }),
  );
  const x = fleet.replicas[index];
  fleet.replicas[index] = { ...x, inFlight: x.inFlight + 1, running: x.running + 1 };
}

/** A replica that reports its KV cache empty and says nothing of its size. */
export const IDLE_KV = { kvUsage: 0 } as const;

/** A request's ledger entry as the dispatcher makes it: a stream of 80 ms objective on replica 0. */
export const ledgerEntry = (o: Partial<LedgerEntry> = {}): LedgerEntry => ({
  replica: 0,
  promptTokens: 100,
  kvTokens: 200,
  seqs: 1,
  itlSloMs: 80,
  lengths: undefined,
  capTokens: 100,
  expectTokens: 100,
  streamed: 0,
  slowGaps: 0,
  lateGaps: 0,
  slot: -1,
  spanFromMs: 0,
  spanFromToken: 0,
  spanProfileMs: 0,
  ...o,
});

/** A fleet of 256 slots a replica, `replicaKvTokens` each, whose steps take `stepMs` of their shape. */
export const stepSpec = (
  stepMs: (s: StepShape) => number,
  replicaKvTokens = 1_000_000,
): FleetSpec => ({
  model: 'm',
  adapters: [],
  maxModelLen: 8_192,
  maxBatchedTokens: 8_192,
  maxNumSeqs: 256,
  kvBytesPerToken: 1_000,
  replicaKvTokens,
  stepTime: { stepMs },
});
