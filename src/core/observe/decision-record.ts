/**
 * The decision record: one JSON line per request attempt, written when its admission and route
 * are settled (dispatched, rejected or expired) — enough to replay the decision without the
 * prompt, which never appears — and a second one when a dispatched request is cut short (its
 * client's deadline, a shutdown). Every request refused anywhere has one, so its id finds it:
 * a body that could not be read has neither class nor demand, and says so with nulls. Keys are
 * snake_case and stable; numbers are rounded like reports.
 */
import type { AdmissionDecision, RejectReason, Rejection } from '../request/decision.ts';
import type { SloClass, SloClassName } from '../request/slo-classes.ts';
import type { Ms, Tokens } from '../request/units.ts';
import type { Ticket } from '../queueing/ticket.ts';
import type { LlmRequest, ReasoningEffort } from '../request/request.ts';
import type { Demand } from '../request/demand.ts';

/**
 * `expire`: it ran out of time (waiting, or mid-stream past its client's deadline); `abort`: the
 * host stopped it (a gateway shutting down).
 */
export type DecisionResult = 'admit' | 'degrade' | 'defer' | 'reject' | 'expire' | 'abort';

const r3 = (x: number) => Math.round(x * 1e3) / 1e3;
const nullable = (x: number | null | undefined) => (x == null ? null : r3(x));

export interface DecisionRecord {
  readonly request_id: string;
  /** Null when the caller could not be authenticated. */
  readonly tenant: string | null;
  /** Null when the request could not be read far enough to have one. */
  readonly class: SloClassName | null;
  /** The LoRA adapter the request asked for; absent for the base model. */
  readonly adapter?: string;
  /** The choices it asked for (`n`), when more than one. */
  readonly choices?: number;
  /**
   * Its attempt, when a retry (`x-goodput-attempt`, the SDKs' `x-stainless-retry-count`, the
   * simulated client's): a replay offers its first attempt, and its client retries on its own.
   */
  readonly attempt?: number;
  /** The conversation it belongs to (`x-session-id`), when it named one: replays keep it. */
  readonly session?: string;
  /** The reasoning effort it asked for, when one: its output lengths are learned at it. */
  readonly reasoning_effort?: ReasoningEffort;
  readonly policy_revision: string;
  readonly at_ms: number;
  /**
   * What the request asked, as read — enough to replay it (`simulate --trace` takes a decision
   * log): when it arrived, on at_ms's clock; its prompt's size, as estimated (null: refused
   * before its body was read); its output limit and its client's deadline after arrival (null:
   * none). Null when it could not be read as a request at all.
   */
  readonly asked: {
    readonly arrival_ms: number;
    readonly input_tokens: number | null;
    readonly max_tokens: number | null;
    readonly timeout_ms: number | null;
  } | null;
  readonly slo_ms: {
    readonly ttft: number | null;
    readonly itl_p99: number | null;
    readonly tpot: number | null;
    readonly e2e: number | null;
  } | null;
  readonly demand: {
    readonly input_tokens: number;
    readonly prefix_hit_tokens: number;
    readonly output_p50: number;
    readonly output_p90: number;
    readonly output_source: string;
    readonly kv_reserved_tokens: number;
    readonly kv_reserved_bytes: number;
    readonly prefill_ms: number;
    /**
     * Disaggregated serving: the prefill pool's queue ahead and the KV transfer to the decode
     * replica, both part of predicted_ttft_ms; 0 when colocated.
     */
    readonly handover_ms: number;
    readonly work_p90_ms: number;
  } | null;
  readonly admission: {
    readonly result: DecisionResult;
    readonly deferred: boolean;
    readonly reason: RejectReason | null;
    readonly status: number | null;
    readonly retry_after_ms: number | null;
    /** The refused request keeps its turn at retry_after_ms (queueing/kept-turns.ts). */
    readonly kept_turn: boolean;
    readonly slack_ms: number | null;
    readonly predicted_ttft_ms: number | null;
    /**
     * The wait in the queue predicted at the door (part of predicted_ttft_ms); for a refusal
     * from the queue alone, made before the request was read, the least any request like it
     * would have had.
     */
    readonly predicted_wait_ms: number | null;
    /** The target sojourn queue-delay control held the wait to; null when not in force. */
    readonly queue_target_ms: number | null;
    readonly degrade_level: number | null;
    readonly degraded_max_tokens: number | null;
    readonly dropped_input_tokens: number | null;
  };
  readonly route: {
    readonly replica: number;
    readonly prefix_hit_tokens: number;
    readonly queued_ms: number;
    /** Its prompt went in staged pieces of this many tokens (`staged-prefill.ts`); null: whole. */
    readonly staged_piece_tokens: number | null;
  } | null;
  /**
   * What happened against predicted_wait_ms: how long it waited in the queue before it was
   * dispatched or expired there; null when it never queued.
   */
  readonly waited_ms: number | null;
}

export interface DecisionRecordInput {
  readonly req: LlmRequest;
  readonly cls: SloClass;
  readonly revision: string;
  readonly atMs: Ms;
  readonly decision: AdmissionDecision;
  readonly demand: Demand | undefined;
  readonly result: DecisionResult;
  readonly route: {
    readonly replica: number;
    /** The prompt's tokens the replica's prefix cache was expected to hold, as it was routed. */
    readonly hitTokens: Tokens;
    readonly queuedMs: Ms;
    readonly pieceTokens?: Tokens;
  } | null;
  /** How long it waited in the queue, when it queued. */
  readonly waitedMs?: Ms;
  readonly deferred: boolean;
  /** Why it expired or was cut, where the decision itself (an admission) names no reason. */
  readonly reason?: RejectReason;
  /** The status its client got, where the decision itself names none (a cut stream's). */
  readonly status?: number;
  /** The Retry-After its client was told, where the decision itself tells none (an expiry's). */
  readonly retryAfterMs?: Ms;
}

export function decisionRecord(d: DecisionRecordInput): DecisionRecord {
  const o = d.cls.objectives;
  const a = d.decision;
  const demand = d.demand;
  const queue = a.outcome === 'reject' ? a.queue : undefined;
  return {
    request_id: d.req.id,
    tenant: d.req.tenant,
    class: d.req.sloClass,
    ...(d.req.adapter === undefined ? {} : { adapter: d.req.adapter }),
    ...(d.req.choices === undefined ? {} : { choices: d.req.choices }),
    ...((d.req.attempt ?? 1) > 1 ? { attempt: d.req.attempt } : {}),
    ...(d.req.session === undefined ? {} : { session: d.req.session }),
    ...(d.req.reasoningEffort === undefined ? {} : { reasoning_effort: d.req.reasoningEffort }),
    policy_revision: d.revision,
    at_ms: r3(d.atMs),
    asked: {
      arrival_ms: r3(d.req.arrivalMs),
      // A request refused unread has no size (its host's LlmRequest says 0).
      input_tokens: d.req.inputTokens > 0 ? d.req.inputTokens : null,
      max_tokens: d.req.maxTokens ?? null,
      timeout_ms: d.req.deadlineMs === undefined ? null : r3(d.req.deadlineMs - d.req.arrivalMs),
    },
    slo_ms: {
      ttft: o.ttftMs ?? null,
      itl_p99: o.itlP99Ms ?? null,
      tpot: o.tpotMs ?? null,
      e2e: o.e2eMs ?? null,
    },
    demand:
      demand === undefined
        ? null
        : {
            input_tokens: demand.inputTokens,
            prefix_hit_tokens: demand.prefixHitTokens,
            output_p50: demand.output.p50,
            output_p90: demand.output.p90,
            output_source: demand.output.source,
            kv_reserved_tokens: demand.kvTokens,
            kv_reserved_bytes: demand.kvBytes,
            prefill_ms: r3(demand.prefillMs),
            handover_ms: r3(demand.handoverMs),
            work_p90_ms: r3(demand.workP90Ms),
          },
    admission: {
      result: d.result,
      deferred: d.deferred,
      reason: d.reason ?? (a.outcome === 'admit' ? null : a.reason),
      status: d.status ?? (a.outcome === 'reject' ? a.status : null),
      retry_after_ms: d.retryAfterMs ?? (a.outcome === 'reject' ? (a.retryAfterMs ?? null) : null),
      kept_turn: a.outcome === 'reject' && a.keptTurn === true,
      slack_ms: nullable(a.assessment?.slackMs),
      predicted_ttft_ms: nullable(a.assessment?.predictedTtftMs),
      predicted_wait_ms: nullable(a.assessment?.waitMs ?? queue?.leastWaitMs),
      queue_target_ms: nullable(a.assessment?.queueTargetMs ?? queue?.targetMs),
      degrade_level: a.outcome === 'admit' ? (a.degradation?.level ?? null) : null,
      degraded_max_tokens: a.outcome === 'admit' ? (a.degradation?.maxTokens ?? null) : null,
      dropped_input_tokens:
        a.outcome === 'admit' ? (a.degradation?.droppedInputTokens ?? null) : null,
    },
    route:
      d.route === null
        ? null
        : {
            replica: d.route.replica,
            prefix_hit_tokens: d.route.hitTokens,
            queued_ms: r3(d.route.queuedMs),
            staged_piece_tokens: d.route.pieceTokens ?? null,
          },
    waited_ms: d.waitedMs === undefined ? null : r3(d.waitedMs),
  };
}

/** The record of a ticket whose fate is settled. */
export function ticketRecord<H>(
  t: Ticket<H>,
  revision: string,
  atMs: Ms,
  result: DecisionResult,
  reason?: RejectReason,
  status?: number,
  retryAfterMs?: Ms,
): DecisionRecord {
  return decisionRecord({
    req: t.asked,
    cls: t.cls,
    revision,
    atMs,
    decision: t.decision,
    demand: t.demand,
    result,
    route:
      t.replica < 0
        ? null
        : {
            replica: t.replica,
            hitTokens: t.hitTokens,
            queuedMs: t.dispatchedMs - t.offeredMs,
            pieceTokens: t.entry?.pieceTokens,
          },
    waitedMs: (t.replica < 0 ? atMs : t.dispatchedMs) - t.offeredMs,
    deferred: t.wasDeferred,
    reason,
    status,
    retryAfterMs,
  });
}

/** The record of a request refused before it held a ticket, whoever turned it away. */
export function refusalRecord(
  req: LlmRequest,
  cls: SloClass,
  revision: string,
  atMs: Ms,
  decision: Rejection,
): DecisionRecord {
  const demand = decision.assessment?.demand;
  const fields = { req, cls, revision, atMs, decision, demand };
  return decisionRecord({ ...fields, result: 'reject', route: null, deferred: false });
}

/** A request turned away before it was one the policy could look at: unreadable, unauthenticated. */
export interface UnreadRefusal {
  readonly requestId: string;
  readonly tenant: string | null;
  readonly cls: SloClassName | null;
  readonly revision: string;
  readonly atMs: Ms;
  readonly reason: RejectReason;
  readonly status: number;
}

export function unreadRecord(u: UnreadRefusal): DecisionRecord {
  return {
    request_id: u.requestId,
    tenant: u.tenant,
    class: u.cls,
    policy_revision: u.revision,
    at_ms: r3(u.atMs),
    asked: null,
    slo_ms: null,
    demand: null,
    admission: {
      result: 'reject',
      deferred: false,
      reason: u.reason,
      status: u.status,
      retry_after_ms: null,
      kept_turn: false,
      slack_ms: null,
      predicted_ttft_ms: null,
      predicted_wait_ms: null,
      queue_target_ms: null,
      degrade_level: null,
      degraded_max_tokens: null,
      dropped_input_tokens: null,
    },
    route: null,
    waited_ms: null,
  };
}
