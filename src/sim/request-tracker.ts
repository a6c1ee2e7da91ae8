/**
 * Measurement state of one logical request while it is in the simulation, and the outcome it
 * becomes. Timestamps are simulated ms; TTFT and its parts run from the original arrival, so
 * retries and queueing before them count against the request, as its user would feel them.
 */
import type { LlmRequest } from '../core/request/request.ts';
import type { Ms } from '../core/request/units.ts';
import type { FinalState, RequestOutcome } from '../core/observe/request-outcome.ts';
import { percentileSorted } from '../core/observe/percentile.ts';
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
  maxGapMs = 0;
  readonly gaps: number[] = [];
  rejectReason: string | undefined;
  failReason: string | undefined;

  constructor(req: LlmRequest) {
    this.req = req;
  }

  recordToken(atMs: Ms): number {
    const gap = atMs - (this.lastTokenMs as Ms);
    this.gaps.push(gap);
    if (gap > this.maxGapMs) this.maxGapMs = gap;
    this.lastTokenMs = atMs;
    this.outputTokens++;
    return gap;
  }

  outcome(state: FinalState): RequestOutcome {
    const arrival = this.req.arrivalMs;
    const first = this.firstTokenMs;
    let itlP99Ms: number | undefined;
    if (this.gaps.length > 0) itlP99Ms = percentileSorted(Float64Array.from(this.gaps).sort(), 99);
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
      itlP99Ms,
      maxStallMs: this.gaps.length > 0 ? this.maxGapMs : undefined,
      attempts: this.attempts,
      preemptions: this.preemptions,
      failReason: this.failReason,
      rejectReason: this.rejectReason,
    };
  }
}
