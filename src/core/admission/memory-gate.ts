/**
 * The memory gate: the request's prompt KV plus its reserved output KV (predicted p90) must fit
 * in some ready replica's free blocks — free after the reservations of everything in flight —
 * while leaving a reserve for preemption and swap. A request that could not fit even in the
 * largest replica, empty, is refused as too long for this fleet (400); one that fits only once
 * others finish is a capacity refusal (503) with a Retry-After from the queue's drain. Replicas
 * that report caches of different sizes are held to the largest one's reserve.
 */
import { PASS, waitAsk, type GateInput, type GateVerdict } from './gate.ts';
import { drainRetryAfterMs } from './retry-after.ts';

export const MEMORY_GATE = 'memory';

export interface MemoryGateParams {
  readonly reserveRatio: number;
  readonly retryAfterMinMs: number;
  readonly retryAfterMaxMs: number;
}

export function checkMemory(input: GateInput, p: MemoryGateParams): GateVerdict {
  const { fleet, demand } = input;
  const reserve = fleet.largestKvTokens * p.reserveRatio;
  const usable = fleet.largestKvTokens - reserve;
  if (demand.kvTokens > usable) {
    const context = {
      promptTokens: demand.inputTokens,
      outputTokens: demand.kvTokens - demand.inputTokens,
      limitTokens: Math.floor(usable),
      limit: 'kv_cache' as const,
    };
    return { pass: false, reason: 'context_length', status: 400, context };
  }
  if (demand.kvTokens <= fleet.maxFreeKvTokens - reserve) return PASS;
  const ahead = fleet.queueAhead(input.cls.name, waitAsk(input));
  return {
    pass: false,
    reason: 'kv_capacity',
    status: 503,
    retryAfterMs: drainRetryAfterMs(ahead.waitMs, p.retryAfterMinMs, p.retryAfterMaxMs),
  };
}
