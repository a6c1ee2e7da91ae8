/**
 * The decision record: one JSON line per request attempt, written when its admission and route
 * are settled (dispatched, rejected or expired) — enough to replay the decision without the
 * prompt, which never appears. Keys are snake_case and stable; numbers are rounded like reports.
 */
import type { AdmissionDecision } from '../admission/admission.ts';
import type { SloClass } from '../request/slo-classes.ts';
import type { Ms } from '../request/units.ts';
import type { Ticket } from '../queueing/ticket.ts';
import type { LlmRequest } from '../request/request.ts';
import type { Demand } from '../estimate/demand.ts';

export type DecisionResult = 'admit' | 'degrade' | 'defer' | 'reject' | 'expire';

const r3 = (x: number) => Math.round(x * 1e3) / 1e3;

export interface DecisionRecordInput {
  readonly req: LlmRequest;
  readonly cls: SloClass;
  readonly revision: string;
  readonly atMs: Ms;
  readonly decision: AdmissionDecision;
  readonly demand: Demand | undefined;
  readonly result: DecisionResult;
  readonly route: { readonly replica: number; readonly queuedMs: Ms } | null;
  readonly deferred: boolean;
}

export function decisionRecord(d: DecisionRecordInput) {
  const o = d.cls.objectives;
  const a = d.decision;
  const demand = d.demand;
  return {
    request_id: d.req.id,
    tenant: d.req.tenant,
    class: d.req.sloClass,
    policy_revision: d.revision,
    at_ms: r3(d.atMs),
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
            work_p90_ms: r3(demand.workP90Ms),
          },
    admission: {
      result: d.result,
      deferred: d.deferred,
      reason: a.outcome === 'admit' ? null : a.reason,
      status: a.outcome === 'reject' ? a.status : null,
      retry_after_ms: a.outcome === 'reject' ? (a.retryAfterMs ?? null) : null,
      slack_ms: a.assessment?.slackMs == null ? null : r3(a.assessment.slackMs),
      predicted_ttft_ms: a.assessment === undefined ? null : r3(a.assessment.predictedTtftMs),
      degrade_level: a.outcome === 'admit' ? (a.degradation?.level ?? null) : null,
      degraded_max_tokens: a.outcome === 'admit' ? (a.degradation?.maxTokens ?? null) : null,
      dropped_input_tokens:
        a.outcome === 'admit' ? (a.degradation?.droppedInputTokens ?? null) : null,
    },
    route:
      d.route === null
        ? null
        : { replica: d.route.replica, prefix_hit_tokens: 0, queued_ms: r3(d.route.queuedMs) },
  };
}

export type DecisionRecord = ReturnType<typeof decisionRecord>;

/** The record of a ticket whose fate is settled. */
export function ticketRecord<H>(
  t: Ticket<H>,
  revision: string,
  atMs: Ms,
  result: DecisionResult,
): DecisionRecord {
  return decisionRecord({
    req: t.asked,
    cls: t.cls,
    revision,
    atMs,
    decision: t.decision,
    demand: t.demand,
    result,
    route: t.replica < 0 ? null : { replica: t.replica, queuedMs: t.dispatchedMs - t.offeredMs },
    deferred: t.wasDeferred,
  });
}
