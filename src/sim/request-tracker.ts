/**
 * One logical request while it is in the simulation: the engine request of its current
 * attempt, its measurement state, and the outcome it becomes. One object serves all attempts
 * (a retry happens only after the previous attempt left the engine), so the per-token path
 * touches a single object. Timestamps are simulated ms; TTFT and its parts run from the
 * original arrival, so retries and queueing count against the request, as its user feels them.
 */
import type { LlmRequest } from '../core/request/request.ts';
import type { Ms } from '../core/request/units.ts';
import type { SloClass, SloObjectives } from '../core/request/slo-classes.ts';
import type { FinalState, RequestOutcome } from '../core/observe/request-outcome.ts';
import { outcomeRecord, type OutcomeRecord } from '../core/observe/outcome-record.ts';
import { TailSamples } from '../core/observe/tail-samples.ts';
import type { EngineRequest } from '../engine/engine-types.ts';
import type { StepEnds } from '../engine/token-runs.ts';
import type { Ticket } from '../core/queueing/ticket.ts';
import type { LedgerLease } from '../core/admission/budget/tenant-ledger.ts';
import type { TokenClock } from './token-clock.ts';

export class RequestTracker implements EngineRequest {
  // The fields every token reads come first, so they share the object's first cache line.
  /** Its row in the run's token clock: its last token's time and its gaps' floor. */
  private readonly slot: number;
  private readonly times: TokenClock;
  /** The next gap spans a tool call's pause: the tool's time, not the server's, so not a gap. */
  private pauseGap = false;
  private gapCount = 0;
  /** Tokens streamed to the client so far. */
  streamed = 0;
  /**
   * Every gap, kept only when the request might end without completing after producing tokens
   * (clients with timeouts): the pooled ITL must then drop its gaps, as vLLM's client does.
   */
  readonly gaps: number[] | null;
  /** The request's largest gaps: enough for its exact p99 and max. */
  private tail: TailSamples;
  readonly req: LlmRequest;
  /** The current attempt's id: the request id, then `id#2`, `id#3`… for retries. */
  id: string;
  /** What the engine serves on this attempt: the request as admitted (degraded, maybe). */
  inputTokens: number;
  outputTokens: number;
  readonly prefix: LlmRequest['prefix'];
  /** Its class's band: the engine's request priority under `--scheduling-policy priority`. */
  readonly priority: number;
  readonly toolCalls: LlmRequest['toolCalls'];
  /** The LoRA adapter it asks for (the engine runs it with that adapter). */
  readonly adapter: string | undefined;
  /** When its first token is due, by its class's TTFT objective (the engine's TTFT boost). */
  readonly ttftDeadlineMs: Ms | undefined;
  /** Its class's token-gap objective, and when it must be complete — its class's completion
   * objective or its client's deadline, the sooner (the engine's slack-aware preemption). */
  readonly itlSloMs: Ms | undefined;
  readonly e2eDeadlineMs: Ms | undefined;
  /** Disaggregated serving: prompt tokens whose KV the prefill pool sent its decode replica. */
  kvTransferredTokens: number | undefined;
  /** Replica of the current attempt, once dispatched. */
  replica = -1;
  /**
   * The last attempt dispatched (0: none yet), the id the control plane knew it by, and the TTFT
   * admission predicted for it.
   */
  private dispatchedAttempt = 0;
  private dispatchedId = '';
  private predictedTtftMs: Ms | undefined;
  timeout: { cancel(): void } | null = null;
  /** Timer that drops the attempt if it is still waiting at its deadline. */
  expiry: { cancel(): void } | null = null;
  /** The control plane's ticket of the current attempt. */
  ticket: Ticket<RequestTracker> | null = null;
  /** What the current attempt holds of its tenant's quotas, until it ends. */
  lease: LedgerLease | null = null;
  deferred = false;
  degradeLevel: number | undefined;
  attempts = 0;
  admitted = false;
  prefillStartMs: Ms | undefined;
  firstTokenMs: Ms | undefined;
  firstStepStartMs: Ms | undefined;
  cachedTokens = 0;
  preemptions = 0;
  rejectReason: string | undefined;
  failReason: string | undefined;

  constructor(
    req: LlmRequest,
    times: TokenClock,
    keepGaps: boolean,
    priority = 0,
    objectives: SloObjectives = {},
  ) {
    this.times = times;
    this.slot = times.slot();
    this.req = req;
    this.priority = priority;
    const { ttftMs, itlP99Ms, e2eMs } = objectives;
    this.ttftDeadlineMs = ttftMs === undefined ? undefined : req.arrivalMs + ttftMs;
    this.itlSloMs = itlP99Ms;
    const e2eDeadline = Math.min(
      e2eMs === undefined ? Infinity : req.arrivalMs + e2eMs,
      req.deadlineMs ?? Infinity,
    );
    this.e2eDeadlineMs = e2eDeadline === Infinity ? undefined : e2eDeadline;
    this.id = req.id;
    this.inputTokens = req.inputTokens;
    this.outputTokens = cappedOutput(req);
    this.prefix = req.prefix;
    this.toolCalls = req.toolCalls;
    this.adapter = req.adapter;
    this.tail = new TailSamples(this.outputTokens - 1);
    this.gaps = keepGaps ? [] : null;
  }

  /** When its last token came (undefined before its first). */
  get lastTokenMs(): Ms | undefined {
    return this.times.last(this.slot);
  }

  set lastTokenMs(atMs: Ms | undefined) {
    this.times.lastMs[this.slot] = atMs ?? NaN;
  }

  /**
   * The request as this attempt offers it. A disciplined client sends every attempt with its
   * number, one idempotency key and the original absolute deadline, so the server knows a retry
   * when it sees one. A naive client's retry is, to the server, a new request arriving now.
   */
  offered(disciplined: boolean, nowMs: Ms): LlmRequest {
    this.attemptOfferedMs = nowMs;
    // A first attempt is the request as it is: no copy on the path every request takes (a
    // simulated first attempt cannot meet an earlier one of itself, so it needs no key).
    if (this.attempts === 1) return this.req;
    const done = this.resumedAfter;
    if (done > 0) {
      // The control plane sends the rest as a new request: the prompt and what was streamed.
      const rest = Math.max(1, cappedOutput(this.req) - done);
      return {
        ...this.req,
        id: this.id,
        arrivalMs: nowMs,
        inputTokens: this.req.inputTokens + done,
        outputTokens: rest,
        maxTokens: rest,
        attempt: 1,
        idempotencyKey: this.id,
      };
    }
    if (disciplined) {
      return { ...this.req, attempt: this.attempts, idempotencyKey: this.req.id };
    }
    return { ...this.req, id: this.id, arrivalMs: nowMs, attempt: 1, idempotencyKey: this.id };
  }

  /**
   * A naive client threw away a partial answer: measurement starts over with the next
   * attempt. Returns the dropped gaps (the pooled ITL must not count them).
   */
  discardPartial(): number[] {
    const dropped = this.gaps === null ? [] : this.gaps.splice(0);
    this.firstTokenMs = undefined;
    this.firstStepStartMs = undefined;
    this.lastTokenMs = undefined;
    this.streamed = 0;
    this.gapCount = 0;
    this.tail = new TailSamples(this.outputTokens - 1);
    this.times.tailFloor[this.slot] = -Infinity;
    return dropped;
  }

  /**
   * Tokens streamed before its replica failed, when the stream resumes on another: the next
   * attempt asks for the rest, its prompt the original plus what was streamed (recomputed
   * there), and its first token is the stream's next one — a gap, not a first token.
   */
  resumedAfter = 0;
  /** When the current attempt was offered (a resumed stream's TTFT to the control plane). */
  attemptOfferedMs = 0;

  /** The stream resumes elsewhere after its replica failed (see `resumedAfter`). */
  resume(): void {
    this.resumedAfter = this.streamed;
  }

  /** Starts attempt number `attempts + 1`. */
  nextAttempt(): void {
    // A retry follows an attempt that produced no token; its prefill, if it began, was thrown
    // away, so TTFT's queue part runs to the prefill that counts. A resumed stream keeps its
    // first token's account.
    if (this.resumedAfter === 0) this.prefillStartMs = undefined;
    this.attempts++;
    this.id = this.attempts === 1 ? this.req.id : `${this.req.id}#${this.attempts}`;
  }

  /**
   * The control plane dispatched the current attempt as `ticket` says: its request as served
   * (degraded, maybe), on its replica.
   */
  dispatched(ticket: Ticket<RequestTracker>): void {
    this.ticket = ticket;
    this.admitted = true;
    this.rejectReason = undefined;
    this.replica = ticket.replica;
    const d = ticket.decision;
    this.dispatchedAttempt = this.attempts;
    this.dispatchedId = ticket.asked.id;
    this.predictedTtftMs = d.assessment?.predictedTtftMs;
    this.degradeLevel = d.outcome === 'admit' ? d.degradation?.level : undefined;
    this.inputTokens = ticket.req.inputTokens;
    this.outputTokens = cappedOutput(ticket.req);
  }

  /**
   * How it ended (`outcome`, judged by `cls`), as the record found by its last attempt's
   * decision; undefined when that attempt was never dispatched (its decision record says why).
   */
  record(outcome: RequestOutcome, cls: SloClass, atMs: Ms): OutcomeRecord | undefined {
    if (this.dispatchedAttempt !== this.attempts) return undefined;
    const id = this.dispatchedId;
    return outcomeRecord({ ...outcome, id }, cls, atMs, this.predictedTtftMs);
  }

  /** Its tool call paused it: the gap to the next token is not the server's. */
  paused(): void {
    this.pauseGap = true;
  }

  /**
   * A token at `atMs`; returns its gap, or −1 for the one after a tool call's pause (always a
   * number: the per-token path keeps it unboxed).
   */
  recordToken(atMs: Ms): number {
    const { lastMs, tailFloor } = this.times;
    const k = this.slot;
    this.streamed++;
    if (this.pauseGap) {
      this.pauseGap = false;
      lastMs[k] = atMs;
      return -1;
    }
    const gap = atMs - lastMs[k];
    lastMs[k] = atMs;
    if (gap > tailFloor[k]) tailFloor[k] = this.tail.add(gap);
    this.gapCount++;
    if (this.gaps !== null) this.gaps.push(gap);
    return gap;
  }

  /**
   * Its tokens at steps `from + 1` … `to` of a replica, each the step after the one before
   * (token-runs.ts): as `recordToken` for each, the pooled gaps left to the caller.
   */
  recordRun(steps: StepEnds, from: number, to: number): void {
    const { lastMs, tailFloor } = this.times;
    const k = this.slot;
    let floor = tailFloor[k];
    let before = steps.endMs(from);
    for (let step = from + 1; step <= to; step++) {
      const at = steps.endMs(step);
      const gap = at - before;
      before = at;
      if (gap > floor) floor = this.tail.add(gap);
      if (this.gaps !== null) this.gaps.push(gap);
    }
    tailFloor[k] = floor;
    lastMs[k] = before;
    this.streamed += to - from;
    this.gapCount += to - from;
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
      outputTokens: this.streamed,
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
      deferred: this.deferred,
      degradeLevel: this.degradeLevel,
    };
  }
}

function cappedOutput(req: LlmRequest): number {
  return req.maxTokens === undefined ? req.outputTokens : Math.min(req.outputTokens, req.maxTokens);
}
