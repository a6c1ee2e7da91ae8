/**
 * The admission extension point: decides, before any byte streams, whether a request is
 * admitted or turned away. Rules: `decide` is pure given its state and inputs; a rejection
 * always carries a closed-enum reason, an HTTP-style status (429: the tenant's own limit,
 * 503: service capacity) and a Retry-After.
 */
import type { LlmRequest } from '../request/request.ts';
import type { Ms } from '../request/units.ts';

export const REJECT_REASONS = [
  'tenant_budget',
  'service_capacity',
  'deadline',
  'kv_capacity',
  'contract',
] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

export type AdmissionDecision =
  | { readonly outcome: 'admit' }
  | {
      readonly outcome: 'reject';
      readonly status: 429 | 503;
      readonly reason: RejectReason;
      readonly retryAfterMs: Ms;
    };

export interface AdmissionContext {
  readonly nowMs: Ms;
}

export interface Admission<S = unknown> {
  readonly type: string;
  initState(): S;
  decide(state: S, req: LlmRequest, ctx: AdmissionContext): AdmissionDecision;
}

export const ADMIT: AdmissionDecision = { outcome: 'admit' };
