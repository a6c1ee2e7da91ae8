/**
 * Fixtures for admission tests: a fleet summary with controllable load, demands, gate inputs.
 * Numbers are round so expected verdicts can be worked out by hand.
 */
import type { Demand } from '../request/demand.ts';
import type { FleetLoad, QueueAhead } from '../estimate/fleet-load.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';
import type { LlmRequest } from '../request/request.ts';
import { DEFAULT_SLO_CLASSES } from '../request/slo-classes.ts';
import { DEFAULT_TENANT, type TenantPolicy } from '../request/tenant.ts';
import { PASS, type GateInput, type GateVerdict } from './gate.ts';
import { type ContextOverflow, type RejectReason, type RejectStatus } from '../request/decision.ts';

/** 10 ms per 1,000 prompt tokens, plus 5 ms per step, plus 0.1 ms per decoding sequence. */
export const SPEC: FleetSpec = {
  model: 'm',
  adapters: ['a1'],
  maxModelLen: 8192,
  maxBatchedTokens: 8192,
  maxNumSeqs: 256,
  kvBytesPerToken: 1_000,
  replicaKvTokens: 100_000,
  stepTime: {
    stepMs: (s) => 5 + s.prefillTokens / 100 + s.decodeSeqs * 0.1,
  },
};

export function fleet(o: Partial<FleetLoad> & { wait?: QueueAhead } = {}): FleetLoad {
  const wait = o.wait ?? { requests: 0, waitMs: 0 };
  return {
    spec: SPEC,
    readyReplicas: 2,
    maxFreeKvTokens: 100_000,
    largestKvTokens: SPEC.replicaKvTokens,
    decodeBatch: 10,
    decodeContextTokens: 1_000,
    decodeStepMs: 10,
    stepMs: 10,
    prefillQueueMs: 0,
    queueAhead: () => wait,
    leastWaitMs: () => 0,
    queueBudgetMs: () => null,
    queueTargetMs: () => null,
    lowerWaiting: () => false,
    ...o,
  };
}

export function request(o: Partial<LlmRequest> = {}): LlmRequest {
  return {
    id: 'r1',
    arrivalMs: 0,
    inputTokens: 1_000,
    outputTokens: 100,
    tenant: 't',
    sloClass: 'interactive',
    ...o,
  };
}

export function demand(o: Partial<Demand> = {}): Demand {
  return {
    inputTokens: 1_000,
    prefixHitTokens: 0,
    prefillMs: 15,
    prefillSteps: 1,
    firstDecodeMs: 10,
    handoverMs: 0,
    output: { p10: 20, p50: 100, p90: 400, source: 'class' },
    kvTokens: 1_400,
    kvBytes: 1_400_000,
    workP90Ms: 415,
    ...o,
  };
}

export const TENANT: TenantPolicy = { name: 't', ...DEFAULT_TENANT };

export function gateInput(o: Partial<GateInput> = {}): GateInput {
  const req = o.req ?? request();
  return {
    req,
    demand: demand(),
    cls: DEFAULT_SLO_CLASSES[req.sloClass],
    tenant: TENANT,
    nowMs: 0,
    fleet: fleet(),
    ...o,
  };
}

export type WantVerdict =
  | 'pass'
  | {
      readonly reason: RejectReason;
      readonly status: RejectStatus;
      /** Undefined for contract errors, which retrying cannot fix. */
      readonly retryAfterMs?: number;
      /** The sizes a `context_length` refusal reports. */
      readonly context?: ContextOverflow;
    };

/** The verdict a gate should return, as a value to compare with `deepEqual`. */
export function expectedVerdict(want: WantVerdict): GateVerdict {
  if (want === 'pass') return PASS;
  const { retryAfterMs, context, ...refusal } = want;
  return {
    pass: false,
    ...refusal,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    ...(context === undefined ? {} : { context }),
  };
}
