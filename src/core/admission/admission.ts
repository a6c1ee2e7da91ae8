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
import type { Demand } from '../estimate/demand.ts';
import type { FleetLoad } from '../estimate/fleet-load.ts';
import type { ContextOverflow } from './gate.ts';

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
  // the client's own deadline has passed: no attempt can succeed any more (504, never retried)
  'deadline_exceeded',
  // budget: the tenant's own limits (429)
  'tenant_tokens',
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
  // the gateway's own CPU is behind: shed on arrival, before the body is read
  'gateway_overloaded',
] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];
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
      /** Present for 429 and 503. */
      readonly retryAfterMs?: Ms;
      /** Present for `context_length`: the sizes that did not fit. */
      readonly context?: ContextOverflow;
      readonly assessment?: Assessment;
    };

export type Rejection = Extract<AdmissionDecision, { outcome: 'reject' }>;

export interface AdmissionContext {
  readonly nowMs: Ms;
  readonly fleet: FleetLoad;
  /** The demand estimator, for the request as asked or as a degraded variant of it. */
  estimate(req: LlmRequest): Demand;
}

export interface Admission<S = unknown> {
  readonly type: string;
  initState(): S;
  decide(state: S, req: LlmRequest, ctx: AdmissionContext): AdmissionDecision;
  /** The pipeline admitted `req` (now, or later from the deferred queue). */
  commit(state: S, req: LlmRequest, decision: AdmissionDecision, ctx: AdmissionContext): void;
  /** `req` ended; `outputTokens` were generated and `gpuMs` of replica time attributed to it. */
  settle(state: S, req: LlmRequest, outputTokens: Tokens, gpuMs: Ms, nowMs: Ms): void;
}

export const ADMIT: AdmissionDecision = { outcome: 'admit' };
