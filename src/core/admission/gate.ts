/**
 * The gate extension point. A gate checks one concern (contract, memory, deadline, budget) and
 * returns a verdict; it never mutates anything in `check`. Rules: `check` is pure given its
 * state and input; a failing verdict names a closed-enum reason and a status (4xx: the client's
 * or tenant's own doing, 503: service capacity) and, for 429/503, a Retry-After in ms.
 * Gates that hold state (budgets) update it only through `commit` (the request was admitted)
 * and the usage hooks, which the admission controller calls.
 */
import type { LlmRequest } from '../request/request.ts';
import type { SloClass } from '../request/slo-classes.ts';
import type { TenantPolicy } from '../request/tenant.ts';
import type { Ms, Tokens } from '../request/units.ts';
import type { Demand } from '../estimate/demand.ts';
import type { FleetLoad } from '../estimate/fleet-load.ts';
import type { RejectReason, RejectStatus } from './admission.ts';

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
    };

/** A request too long for the model (or for a replica's KV cache), in tokens. */
export interface ContextOverflow {
  readonly promptTokens: Tokens;
  /** The output it asked for (or was reserved for it): absent when only the prompt is too long. */
  readonly outputTokens?: Tokens;
  /** What they must fit in: the context window, or a replica's usable KV cache. */
  readonly limitTokens: Tokens;
  readonly limit: 'context_window' | 'kv_cache';
}

export const PASS: GateVerdict = { pass: true };
