/**
 * A request's life in the gateway's per-request metrics: offered, decided, refused, unreadable,
 * cancelled, its first token, its backend's split of TTFT, its completion. The gateway says when
 * each happens; this says what is counted and under which labels. Its main rule: a request is
 * counted under what it asked for — its class, its tenant and model folded into closed label
 * sets by the metrics — never under what served it, so every series stays one the policy names.
 */
import type { DecisionRecord } from '../core/observe/decision-record.ts';
import type { RejectReason } from '../core/request/decision.ts';
import type { LlmRequest } from '../core/request/request.ts';
import type { Ms, Tokens } from '../core/request/units.ts';
import type { ArrayHistogramSeries } from './array-histogram.ts';
import type { StreamEnd } from './backend.ts';
import { holdsImages } from '../openai/index.ts';
import type { GatewayMetrics, RequestLabel } from './gateway-metrics.ts';
import type { StreamMeter } from './stream-meter.ts';
import type { LearnedImageTokens } from './url-image-tokens.ts';
import type { PromptScale } from '../core/estimate/prompt-scale.ts';

/** What learns from the backends' counts of prompts. */
export interface PromptLearners {
  /** What images by URL take; none without a size rule. */
  readonly urlImages?: LearnedImageTokens;
  /** What the backends make of an estimated prompt; none when the policy turns it off. */
  readonly prompts?: PromptScale;
}

/** A request's latency-series labels: its class and the model it asked for. */
export type RequestLabels = Readonly<Record<RequestLabel, string>>;

export class RequestCounts {
  private readonly metrics: GatewayMetrics;
  /** The served model: what a request that names none is counted under. */
  private readonly served: string;
  /** What the backends' counts of prompts teach (none where off). */
  private readonly learners: PromptLearners;

  constructor(metrics: GatewayMetrics, served: string, learners: PromptLearners = {}) {
    this.metrics = metrics;
    this.served = served;
    this.learners = learners;
  }

  /**
   * The model a request is counted under: the adapter it asked for, else the served model (what
   * the policy's requests mean by none) — the name as asked, whatever a degrade serves instead.
   */
  model(req: LlmRequest): string {
    return this.metrics.model(req.adapter ?? req.model ?? this.served);
  }

  /** The labels of a request's series, by the class it asked for. */
  labels(req: LlmRequest): RequestLabels {
    return { class: req.sloClass, model_name: this.model(req) };
  }

  /**
   * Every attempt, whatever becomes of it: the offered denominator; and, when it declared itself
   * a retry, a retry — refused at the door (its retry budget spent, say) as much as admitted.
   */
  offered(req: LlmRequest): void {
    const m = this.metrics;
    const model = this.model(req);
    m.offered.inc({ class: req.sloClass, tenant: m.tenant(req.tenant), model_name: model });
    m.offeredTokens.inc({ class: req.sloClass, model_name: model }, req.inputTokens);
    if ((req.attempt ?? 1) > 1) m.retries.inc(this.labels(req));
  }

  /** A refusal, by the pipeline or before it. */
  rejected(reason: RejectReason): void {
    if (reason === 'duplicate') this.metrics.duplicates.inc();
  }

  /** A refusal before the pipeline, offered all the same; `shared`: by the shared-state door. */
  refused(req: LlmRequest, reason: RejectReason, shared: boolean): void {
    const m = this.metrics;
    this.offered(req);
    this.rejected(reason);
    if (!shared) return;
    const tenant = m.tenant(req.tenant);
    m.sharedRefusals.inc({ reason, class: req.sloClass, tenant, model_name: this.model(req) });
  }

  /** The pipeline's decision on `asked`, as its record says it. */
  decided(r: DecisionRecord, asked: LlmRequest): void {
    const m = this.metrics;
    m.decisions.inc({
      outcome: r.admission.result,
      reason: r.admission.reason ?? 'none',
      class: r.class ?? 'none',
      tenant: r.tenant === null ? 'none' : m.tenant(r.tenant),
      model_name: this.model(asked),
    });
  }

  /** A request that could not be read as one. */
  unread(reason: RejectReason): void {
    this.metrics.invalid.inc({ reason });
  }

  /** The client abandoned the request while it was `stage`. */
  cancelled(labels: RequestLabels, stage: 'queued' | 'streaming'): void {
    this.metrics.cancels.inc({ ...labels, stage });
  }

  /** The series a request's token gaps go to. */
  gaps(labels: RequestLabels): ArrayHistogramSeries {
    return this.metrics.itl.series(labels);
  }

  /** The first token: TTFT from arrival, split at dispatch into the gateway's and the rest. */
  firstToken(labels: RequestLabels, ttft: Ms, queued: Ms): void {
    const m = this.metrics;
    m.ttft.observe(labels, ttft / 1000);
    m.ttftQueue.observe(labels, queued / 1000);
    m.ttftUpstream.observe(labels, (ttft - queued) / 1000);
  }

  /**
   * A stream's end: its prompt as the backend counted it against the tokens admission planned
   * for `req` (`body`, the request as sent, says whether it held images) — what the learners
   * learn from — and the backend's own split of its part of TTFT, when it gives one.
   */
  streamed(
    labels: RequestLabels,
    end: StreamEnd,
    req: LlmRequest,
    body: { readonly messages?: unknown },
  ): void {
    const m = this.metrics;
    const planned = req.inputTokens;
    if (end.promptTokens > 0 && planned > 0) {
      const images = holdsImages(body.messages) ? 'yes' : 'no';
      const asked = { model_name: labels.model_name, images };
      m.promptCounted.observe(asked, end.promptTokens / planned);
      const { urlImages, prompts } = this.learners;
      if (images === 'yes') urlImages?.counted(body, end.promptTokens, prompts);
      const estimate = req.promptEstimate;
      if (estimate !== undefined && estimate.imageTokens === 0)
        prompts?.observe(estimate.script, estimate.tokens, end.promptTokens);
    }
    const parts = end.ttftParts;
    if (parts === undefined) return;
    m.ttftBackendQueue.observe(labels, parts.queueMs / 1000);
    m.ttftPrefill.observe(labels, parts.prefillMs / 1000);
    m.ttftFirstDecode.observe(labels, parts.firstDecodeMs / 1000);
  }

  /** A completed request, `good` if within every objective of its class. */
  completed(labels: RequestLabels, meter: StreamMeter, outputTokens: Tokens, good: boolean): void {
    const m = this.metrics;
    m.completed.inc(labels);
    if (meter.lastTokenMs !== undefined) {
      m.e2e.observe(labels, (meter.lastTokenMs - meter.arrivalMs) / 1000);
    }
    if (good) {
      m.good.inc(labels);
      m.goodTokens.inc(labels, outputTokens);
    }
  }
}
