/**
 * The admission extension point: decides, before any byte streams, whether a request is
 * admitted as asked, admitted degraded, deferred, or turned away. Rules: `decide` is pure given
 * its state and inputs; a rejection always carries a closed-enum reason and an HTTP-style status
 * (4xx: the request or the tenant's own limit, 503: service capacity), and a Retry-After for
 * 429 and 503. State changes happen only in `commit` (the pipeline admitted it) and `settle`
 * (it ended), so a decision can be computed, logged and replayed without side effects.
 */
import type { LlmRequest } from '../request/request.ts';
import type { Ms, Tokens } from '../request/units.ts';
import type { AdmissionDecision, Rejection } from '../request/decision.ts';
import type { SloClass } from '../request/slo-classes.ts';
import type { Demand } from '../request/demand.ts';
import type { FleetLoad } from '../estimate/fleet-load.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';

export interface AdmissionContext {
  readonly nowMs: Ms;
  readonly fleet: FleetLoad;
  /** The demand estimator, for the request as asked or as a degraded variant of it. */
  estimate(req: LlmRequest): Demand;
}

export interface Admission<S = unknown> {
  readonly type: string;
  /**
   * A client deadline nearer than this is never admitted: the policy's deadline gate keeps this
   * much margin under any prediction. Such a request is refused up front (up-front.ts), before
   * it is read. Absent: only a passed deadline is.
   */
  readonly deadlineMarginMs?: Ms;
  initState(): S;
  /**
   * A refusal `decide` would make of every request of class `cls` from `tenant` prefilling at
   * most `promptTokensAtMost` tokens, whatever else it asks — so a host may give it before it
   * reads the request's body. Undefined when only `decide` can tell. Absent: never.
   */
  refuseUnread?(
    ctx: AdmissionContext,
    cls: SloClass,
    tenant: string,
    promptTokensAtMost: Tokens,
  ): Rejection | undefined;
  /**
   * The refusal `decide` would make of `req` whatever the fleet's load and its tenant's quotas
   * stand at: the request itself is not allowed. A host gives it before the quotas are asked.
   * Undefined when only `decide` can tell. Absent: never.
   */
  refuseAsked?(req: LlmRequest, spec: FleetSpec): Rejection | undefined;
  decide(state: S, req: LlmRequest, ctx: AdmissionContext): AdmissionDecision;
  /** The pipeline admitted `req` (now, or later from the deferred queue). */
  commit(state: S, req: LlmRequest, decision: AdmissionDecision, ctx: AdmissionContext): void;
  /** `req` ended; `outputTokens` were generated and `gpuMs` of replica time attributed to it. */
  settle(state: S, req: LlmRequest, outputTokens: Tokens, gpuMs: Ms, nowMs: Ms): void;
}
