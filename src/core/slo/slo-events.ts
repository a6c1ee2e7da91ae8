/**
 * What one finished request adds to an SLO's objectives. Every request the SLO covers and does
 * not exclude is one `success` event, good only if it completed: a refusal, an expiry or a
 * failure spends budget. The latency objectives count what was measured — a first token for
 * `ttft`, each gap for `token_gap`, a completed request's last token for `e2e` — so a request
 * refused before any token counts against `success` alone, and an SLO that guards latency
 * should carry a `success` objective beside it.
 */
import type { RejectReason } from '../request/decision.ts';
import type { Ms } from '../request/units.ts';
import type { GapCounts } from './gap-tally.ts';
import type { Exclusion, Objective, Who } from './slo.ts';

/** How a request ended, as the SLOs see it. */
export type Finish = 'completed' | 'refused' | 'expired' | 'failed' | 'client_closed';

export interface FinishedRequest extends Who {
  readonly finish: Finish;
  /** Refused, expired or stopped by the host: the closed-enum reason; none for an upstream failure. */
  readonly reason?: RejectReason;
  /** A backend had it (for `client_closed`: the client left during the stream, not before). */
  readonly dispatched: boolean;
  /** From arrival, when a first token came. */
  readonly ttftMs?: Ms;
  /** Arrival to last token, for a completed request. */
  readonly e2eMs?: Ms;
  readonly gaps?: GapCounts;
}

export interface Counts {
  readonly good: number;
  readonly bad: number;
}

/** Which exclusion a refusal's reason falls under; null: the service's to answer for. */
const REASON_EXCLUSION = {
  invalid_request: 'client_error',
  unauthenticated: 'client_error',
  payload_too_large: 'client_error',
  not_found: 'client_error',
  method_not_allowed: 'client_error',
  unknown_tenant: 'client_error',
  class_not_granted: 'client_error',
  unknown_model: 'client_error',
  unknown_adapter: 'client_error',
  context_length: 'client_error',
  output_limit: 'client_error',
  stream_not_allowed: 'client_error',
  duplicate: 'client_error',
  idempotency_key_reused: 'client_error',
  deadline_exceeded: 'client_deadline',
  tenant_tokens: 'tenant_limits',
  tenant_requests: 'tenant_limits',
  tenant_gpu_time: 'tenant_limits',
  tenant_concurrency: 'tenant_limits',
  tenant_sessions: 'tenant_limits',
  root_budget: 'tenant_limits',
  retry_budget: 'tenant_limits',
  kv_capacity: null,
  deadline: null,
  service_capacity: null,
  no_ready_replica: null,
  shutting_down: null,
  handed_over: null,
  gateway_overloaded: null,
  client_closed: 'client_closed_before_dispatch',
} as const satisfies Record<RejectReason, Exclusion | null>;

/** The exclusion that applies to `r`, if any of `exclusions` does. */
export function excludedBy(
  r: FinishedRequest,
  exclusions: readonly Exclusion[],
): Exclusion | undefined {
  const kind =
    r.finish === 'client_closed'
      ? r.dispatched
        ? 'client_closed_streaming'
        : 'client_closed_before_dispatch'
      : r.reason === undefined
        ? null
        : REASON_EXCLUSION[r.reason];
  return kind !== null && exclusions.includes(kind) ? kind : undefined;
}

/** The events `r` adds to objective `o`; null when it measured nothing `o` judges. */
export function judge(o: Objective, r: FinishedRequest): Counts | null {
  if (o.kind === 'success') return r.finish === 'completed' ? GOOD : BAD;
  const within = (ms: Ms | undefined): Counts | null =>
    ms === undefined ? null : ms <= o.thresholdMs ? GOOD : BAD;
  switch (o.kind) {
    case 'ttft':
      return within(r.ttftMs);
    case 'e2e':
      return r.finish === 'completed' ? within(r.e2eMs) : null;
    case 'token_gap': {
      if (r.gaps === undefined || r.gaps.count === 0) return null;
      const bad = r.gaps.above(o.thresholdMs);
      return { good: r.gaps.count - bad, bad };
    }
  }
}

const GOOD: Counts = { good: 1, bad: 0 };
const BAD: Counts = { good: 0, bad: 1 };
