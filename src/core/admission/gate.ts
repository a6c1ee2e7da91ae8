/**
 * The gate extension point. A gate checks one concern (contract, memory, deadline, budget) and
 * returns a verdict; it never mutates anything in `check`. Rules: `check` is pure given its
 * state and input; a failing verdict names a closed-enum reason and a status (4xx: the client's
 * or tenant's own doing, 503: service capacity) and, for 429/503, a Retry-After in ms.
 * Gates that hold state (budgets) update it only through `commit` (the request was admitted)
 * and the usage hooks, which the admission controller calls.
 */
import type { ContextOverflow, RejectReason, RejectStatus } from '../request/decision.ts';
import type { LlmRequest } from '../request/request.ts';
import type { SloClass } from '../request/slo-classes.ts';
import type { TenantPolicy } from '../request/tenant.ts';
import type { Ms } from '../request/units.ts';
import { choicesOf, uncachedTokens, type Demand } from '../request/demand.ts';
import type { FleetLoad, WaitAsk } from '../estimate/fleet-load.ts';

export interface GateInput {
  /** The request as it would be served (after any degradation being tried). */
  readonly req: LlmRequest;
  readonly demand: Demand;
  readonly cls: SloClass;
  /** Undefined when the request names a tenant the policy does not know. */
  readonly tenant: TenantPolicy | undefined;
  readonly nowMs: Ms;
  readonly fleet: FleetLoad;
}

export type GateVerdict =
  | { readonly pass: true }
  | {
      readonly pass: false;
      readonly reason: RejectReason;
      readonly status: RejectStatus;
      /** For 429 and 503; undefined for contract errors, which retrying cannot fix. */
      readonly retryAfterMs?: Ms;
      /** The sizes behind a `context_length` refusal, so the client can see what to cut. */
      readonly context?: ContextOverflow;
      /** No retry can succeed (`Rejection.final`): no Retry-After. */
      readonly final?: true;
    };

export const PASS: GateVerdict = { pass: true };

/** The request of `input` as its wait is predicted (`FleetLoad.queueAhead`). */
export function waitAsk({ req, demand }: GateInput): WaitAsk {
  return {
    promptTokens: uncachedTokens(demand),
    kvTokens: demand.kvTokens,
    outputTokens: demand.output.p50,
    seqs: choicesOf(req),
    tenant: req.tenant,
    reasoningEffort: req.reasoningEffort,
    adapter: req.adapter,
  };
}
