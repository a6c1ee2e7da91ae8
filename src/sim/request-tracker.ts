/**
 * Measurement state of one logical request while it is in the simulation, and the outcome it
 * becomes. Timestamps are simulated ms; TTFT and its parts run from the original arrival, so
 * retries and queueing before them count against the request, as its user would feel them.
 */
import type { LlmRequest } from '../core/request/request.ts';
import type { Ms } from '../core/request/units.ts';
import type { FinalState, RequestOutcome } from '../core/observe/request-outcome.ts';
import { TailSamples } from '../core/observe/tail-samples.ts';
import type { EngineRequest } from '../engine/engine-types.ts';

export class Attempt implements EngineRequest {
  readonly id: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly prefix: LlmRequest['prefix'];
  readonly tracker: RequestTracker;
  readonly replica: number;
  /** Set when the client gave up on it; the engine must drop it and nothing more is recorded. */
  abandoned = false;
  timeout: { cancel(): void } | null = null;

  constructor(tracker: RequestTracker, n: number, replica: number) {
    const req = tracker.req;
    this.id = n === 1 ? req.id : `${req.id}#${n}`;
    this.inputTokens = req.inputTokens;
    this.outputTokens =
      req.maxTokens === undefined ? req.outputTokens : Math.min(req.outputTokens, req.maxTokens);
    this.prefix = req.prefix;
    this.tracker = tracker;
    this.replica = replica;
  }
}

export class RequestTracker {
  readonly req: LlmRequest;
  attempts = 0;
  admitted = false;
  prefillStartMs: Ms | undefined;
  firstTokenMs: Ms | undefined;
  firstStepStartMs: Ms | undefined;
  lastTokenMs: Ms | undefined;
  cachedTokens = 0;
  outputTokens = 0;
  preemptions = 0;
  /** The request's largest gaps: enough for its exact p99 and max. */
  private readonly tail: TailSamples;
  private tailFloor = -Infinity;
  private gapCount = 0;
  /**
   * Every gap, kept only when the request might end without completing after producing tokens
   * (clients with timeouts): the pooled ITL must then drop its gaps, as vLLM's client does.
   */
  readonly gaps: number[] | null;
  rejectReason: string | undefined;
  failReason: string | undefined;

  constructor(req: LlmRequest, keepGaps: boolean) {
    this.req = req;
    const tokens = req.maxTokens === undefined ? req.outputTokens : Math.min(req.outputTokens, req.maxTokens);
    this.tail = new TailSamples(tokens - 1);
    this.gaps = keepGaps ? [] : null;
  }

  recordToken(atMs: Ms): number {
    const gap = atMs - (this.lastTokenMs as Ms);
    if (gap > this.tailFloor) this.tailFloor = this.tail.add(gap);
    this.gapCount++;
    if (this.gaps !== null) this.gaps.push(gap);
    this.lastTokenMs = atMs;
    this.outputTokens++;
    return gap;
  }

  outcome(state: FinalState): RequestOutcome {
    const arrival = this.req.arrivalMs;
    const first = this.firstTokenMs;
    const hasGaps = this.gapCount > 0;
    return {
      id: this.req.id,
      tenant: this.req.tenant,
      sloClass: this.req.sloClass,
      state,
      admitted: this.admitted,
      inputTokens: this.req.inputTokens,
      outputTokens: this.outputTokens,
      cachedTokens: this.cachedTokens,
      ttftMs: first === undefined ? undefined : first - arrival,
      e2eMs: this.lastTokenMs === undefined ? undefined : this.lastTokenMs - arrival,
      queueMs: this.prefillStartMs === undefined ? undefined : this.prefillStartMs - arrival,
      prefillMs:
        this.firstStepStartMs === undefined || this.prefillStartMs === undefined
          ? undefined
          : this.firstStepStartMs - this.prefillStartMs,
      firstDecodeMs:
        first === undefined || this.firstStepStartMs === undefined
          ? undefined
          : first - this.firstStepStartMs,
      itlP99Ms: hasGaps ? this.tail.p99(this.gapCount) : undefined,
      maxStallMs: hasGaps ? this.tail.max : undefined,
      attempts: this.attempts,
      preemptions: this.preemptions,
      failReason: this.failReason,
      rejectReason: this.rejectReason,
    };
  }
}
