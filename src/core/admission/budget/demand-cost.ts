/**
 * What a request is charged against its tenant's budgets at admission, before its real cost is
 * known. Main rule: charge the median (p50) estimate, not the p90 — settle corrects every charge
 * to the actual, so a median keeps the buckets unbiased on average, whereas a p90 charge would
 * turn tenants away for usage most of their requests never reach.
 */
import type { Ms, Tokens } from '../../request/units.ts';
import type { Demand } from '../../request/demand.ts';

/** Input plus the predicted median output. */
export function estimatedTokens(demand: Demand): Tokens {
  return demand.inputTokens + demand.output.p50;
}

/**
 * Median GPU work: prefill plus the p90 decode work scaled to the p50 output. Decode work grows
 * linearly with output tokens at the current per-token step time, which is how `workP90Ms` was
 * built, so scaling its decode share by p50/p90 gives the decode work of a p50 output.
 */
export function estimatedGpuMs(demand: Demand): Ms {
  const decodeP90 = Math.max(0, demand.workP90Ms - demand.prefillMs);
  const share = demand.output.p90 > 0 ? demand.output.p50 / demand.output.p90 : 0;
  return demand.prefillMs + decodeP90 * share;
}
