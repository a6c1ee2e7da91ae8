/**
 * What the door decided about a request, in the vocabulary every stage shares: admitted (as
 * asked or degraded), deferred, or refused with a closed-enum reason, an HTTP-style status and a
 * Retry-After — and the assessment behind it. Admission makes these (../admission/admission.ts);
 * the queues, the records and the hosts carry them.
 */
import type { Ms, Tokens } from './units.ts';
import type { Demand } from './demand.ts';

/** Closed set: used as a metric label and in reports. */
export const REJECT_REASONS = [
  // the request could not be read as one (the gateway's own checks before admission)
  'invalid_request',
  'unauthenticated',
  'payload_too_large',
  'not_found',
  'method_not_allowed',
  // contract: the request itself is not allowed (retrying cannot help)
  'unknown_tenant',
  'class_not_granted',
  'unknown_model',
  'unknown_adapter',
  'context_length',
  'output_limit',
  'stream_not_allowed',
  // an attempt whose idempotency key is already being served (409), or was used for another
  // request (422)
  'duplicate',
  'idempotency_key_reused',
  // the client's own deadline has passed, or is nearer than admission's margin: no attempt can
  // succeed any more (504, never retried)
  'deadline_exceeded',
  // budget: the tenant's own limits (429)
  'tenant_tokens',
  'tenant_requests',
  'tenant_gpu_time',
  'tenant_concurrency',
  'tenant_sessions',
  'root_budget',
  'retry_budget',
  // service capacity (503)
  'kv_capacity',
  'deadline',
  'service_capacity',
  'no_ready_replica',
  'shutting_down',
  // a background response still queued at its gateway's drain, run by another replica instead
  'handed_over',
  // the gateway's own CPU is behind: shed on arrival, before the body is read
  'gateway_overloaded',
  // not a refusal: the client went away while its request waited (its record, never an answer)
  'client_closed',
] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

/** Refusals for want of capacity, which more replicas would have served. */
export const CAPACITY_REASONS: ReadonlySet<RejectReason> = new Set<RejectReason>([
  'kv_capacity',
  'deadline',
  'service_capacity',
  'no_ready_replica',
  'gateway_overloaded',
]);
export type RejectStatus = 400 | 401 | 403 | 404 | 405 | 409 | 413 | 422 | 429 | 503 | 504;

/** Degrade ladder levels, in the order they are tried. */
export const DEGRADE_LEVELS = [1, 2, 3, 4] as const;
export type DegradeLevel = (typeof DEGRADE_LEVELS)[number];

export interface Degradation {
  readonly level: DegradeLevel;
  /** Level 1: output capped to this many tokens. */
  readonly maxTokens?: Tokens;
  /** Level 2: optional prompt tokens dropped. */
  readonly droppedInputTokens?: Tokens;
  /** Level 3: served by this smaller model. */
  readonly model?: string;
}

export interface Assessment {
  readonly demand: Demand;
  /** First-token deadline minus now minus predicted TTFT minus margin; null without a TTFT objective. */
  readonly slackMs: Ms | null;
  readonly predictedTtftMs: Ms;
  /** Predicted wait in the queue (part of the TTFT), and the queue model's before calibration. */
  readonly waitMs: Ms;
  readonly modelledWaitMs: Ms;
  /** The target sojourn queue-delay control held the wait to, null when not in force. */
  readonly queueTargetMs: Ms | null;
}

export type AdmissionDecision =
  | {
      readonly outcome: 'admit';
      readonly degradation?: Degradation;
      readonly assessment?: Assessment;
    }
  | {
      readonly outcome: 'defer';
      /** Absolute time after which the deferred request has failed. */
      readonly deadlineMs: Ms;
      readonly reason: RejectReason;
      readonly assessment?: Assessment;
    }
  | {
      readonly outcome: 'reject';
      readonly status: RejectStatus;
      readonly reason: RejectReason;
      /** Present for 429 and 503 when a retry can succeed. */
      readonly retryAfterMs?: Ms;
      /**
       * No retry of this request can succeed: its client's deadline is out of reach, or will be
       * by the time a Retry-After would send it back (`finalRefusal`). It has no Retry-After, and
       * hosts tell clients not to retry (`x-should-retry: false`).
       */
      readonly final?: true;
      /** The request keeps its turn at its Retry-After (../queueing/kept-turns.ts). */
      readonly keptTurn?: true;
      /** Present for `context_length`: the sizes that did not fit. */
      readonly context?: ContextOverflow;
      readonly assessment?: Assessment;
      /**
       * A refusal from the queue alone, before the request was read (`Admission.refuseUnread`):
       * the least wait any request like it would have had, and the target it passed.
       */
      readonly queue?: { readonly leastWaitMs: Ms; readonly targetMs: Ms };
    };

export type Rejection = Extract<AdmissionDecision, { outcome: 'reject' }>;

/** A request too long for the model (or for a replica's KV cache), in tokens. */
export interface ContextOverflow {
  readonly promptTokens: Tokens;
  /** `promptTokens` is the fewest the prompt can be, its size being an estimate. */
  readonly promptAtLeast?: true;
  /** The output it asked for (or was reserved for it): absent when only the prompt is too long. */
  readonly outputTokens?: Tokens;
  /** What they must fit in: the context window, or a replica's usable KV cache. */
  readonly limitTokens: Tokens;
  readonly limit: 'context_window' | 'kv_cache';
}

export const ADMIT: AdmissionDecision = { outcome: 'admit' };
