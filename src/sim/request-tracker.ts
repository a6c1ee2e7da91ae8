/**
 * One logical request while it is in the simulation: the engine request of its current
 * attempt, its measurement state, and the outcome it becomes. One object serves all attempts
 * (a retry happens only after the previous attempt left the engine), so the per-token path
 * touches a single object. Timestamps are simulated ms; TTFT and its parts run from the
 * original arrival, so retries and queueing count against the request, as its user feels them.
 *
 * A request for several choices (`n`) is its first choice's stream, and each further choice is
 * a `ChoiceStream` in the engine beside it, all with the prompt named block by block so that the
 * prefix cache shares it (`promptBlocks`). Its first token is any choice's first; it ends when
 * every choice has.
 */
import type { LlmRequest, PrefixBlocks } from '../core/request/request.ts';
import type { Ms } from '../core/request/units.ts';
import type { SloClass, SloObjectives } from '../core/request/slo-classes.ts';
import type { FinalState, RequestOutcome } from '../core/observe/request-outcome.ts';
import { outcomeRecord, type OutcomeRecord } from '../core/observe/outcome-record.ts';
import type { EngineRequest } from '../engine/engine-types.ts';
import type { Ticket } from '../core/queueing/ticket.ts';
import type { LedgerLease } from '../core/admission/budget/tenant-ledger.ts';
import type { TokenClock } from './token-clock.ts';
import { TokenStream } from './token-stream.ts';
import { ChoiceStream } from './choice-stream.ts';

export class RequestTracker extends TokenStream implements EngineRequest {
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
  /** The staged pieces its current attempt's prompt goes in (`EngineRequest.pieceTokens`). */
  pieceTokens: number | undefined;
  /** The further choices of the attempt now dispatched, when it asks for several. */
  choices: readonly ChoiceStream[] = NO_CHOICES;
  /** Its streams in the engine not yet ended, on the attempt now dispatched. */
  streamsLeft = 0;
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
  /** Timer that cuts the attempt, once dispatched, at its client's deadline. */
  cut: { cancel(): void } | null = null;
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
    super(times, cappedOutput(req), keepGaps ? [] : null);
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
    this.prefix = (req.choices ?? 1) > 1 ? promptBlocks(req) : req.prefix;
    this.toolCalls = req.toolCalls;
    this.adapter = req.adapter;
  }

  /** Itself: the request its first choice's stream belongs to. */
  get request(): RequestTracker {
    return this;
  }

  /** Tokens streamed to the client on this attempt, every choice's. */
  get outputStreamed(): number {
    let n = this.streamed;
    for (const c of this.choices) n += c.streamed;
    return n;
  }

  /** Each choice's tokens so far, in choice order; undefined for a request of one choice. */
  choiceTokens(): number[] | undefined {
    if (this.choices.length === 0) return undefined;
    return [this.streamed, ...this.choices.map((c) => c.streamed)];
  }

  /**
   * The request as this attempt offers it. A disciplined client sends every attempt with its
   * number, one idempotency key and the original absolute deadline, so the server knows a retry
   * when it sees one. A naive client's retry is, to the server, a new request arriving now.
   */
  offered(disciplined: boolean, nowMs: Ms, retries = false): LlmRequest {
    this.attemptOfferedMs = nowMs;
    // A first attempt is the request as it is: no copy on the path every request takes (a
    // simulated first attempt cannot meet an earlier one of itself). A disciplined client that
    // retries sends its key from the first, so a turn kept for it is found by its retry.
    if (this.attempts === 1) {
      return disciplined && retries ? { ...this.req, idempotencyKey: this.req.id } : this.req;
    }
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
    this.restart(cappedOutput(this.req));
    this.choices = NO_CHOICES;
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

  /**
   * The stream resumes elsewhere after its replica failed (see `resumedAfter`); false for a
   * request of several choices, whose streams stopped at different tokens: it cannot.
   */
  resume(): boolean {
    if (this.choices.length > 0) return false;
    this.resumedAfter = this.streamed;
    return true;
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
   * (degraded, maybe), on its replica, with a stream for each choice it asks for.
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
    this.pieceTokens = ticket.entry?.pieceTokens;
    const n = this.req.choices ?? 1;
    const more: ChoiceStream[] = [];
    for (let k = 1; k < n; k++) more.push(new ChoiceStream(this, k, this.times));
    this.choices = n > 1 ? more : NO_CHOICES;
    this.streamsLeft = n;
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

  /**
   * How it ended, as its client saw it. Of several choices: the first token of any, the last of
   * all, the most tokens one streamed, and the worst choice's p99 gap and longest gap — each
   * choice a stream its client reads on its own.
   */
  outcome(state: FinalState): RequestOutcome {
    const arrival = this.req.arrivalMs;
    const first = this.firstTokenMs;
    let last = this.lastTokenMs;
    let longest = this.streamed;
    let p99 = this.gapP99Ms;
    let maxGap = this.maxGapMs;
    for (const c of this.choices) {
      const at = c.lastTokenMs;
      if (at !== undefined && (last === undefined || at > last)) last = at;
      longest = Math.max(longest, c.streamed);
      const its = c.gapP99Ms;
      if (its !== undefined && (p99 === undefined || its > p99)) p99 = its;
      maxGap = Math.max(maxGap, c.maxGapMs);
    }
    return {
      id: this.req.id,
      tenant: this.req.tenant,
      sloClass: this.req.sloClass,
      state,
      admitted: this.admitted,
      inputTokens: this.req.inputTokens,
      outputTokens: this.outputStreamed,
      ...(this.choices.length > 0 ? { longestChoiceTokens: longest } : {}),
      cachedTokens: this.cachedTokens,
      ttftMs: first === undefined ? undefined : first - arrival,
      e2eMs: last === undefined ? undefined : last - arrival,
      queueMs: this.prefillStartMs === undefined ? undefined : this.prefillStartMs - arrival,
      prefillMs:
        this.firstStepStartMs === undefined || this.prefillStartMs === undefined
          ? undefined
          : this.firstStepStartMs - this.prefillStartMs,
      firstDecodeMs:
        first === undefined || this.firstStepStartMs === undefined
          ? undefined
          : first - this.firstStepStartMs,
      itlP99Ms: p99,
      maxStallMs: p99 === undefined ? undefined : maxGap,
      attempts: this.attempts,
      preemptions: this.preemptions,
      failReason: this.failReason,
      rejectReason: this.rejectReason,
      deferred: this.deferred,
      degradeLevel: this.degradeLevel,
    };
  }
}

const NO_CHOICES: readonly ChoiceStream[] = [];

/** vLLM's default KV block: the size a prompt is named in when the request names none. */
const PROMPT_BLOCK_TOKENS = 16;

/**
 * The prompt of a request for several choices as blocks the prefix cache can name: the blocks
 * its own prefix names, then blocks named for it alone, so that its choices find what a sibling
 * computed and no other request does. Only whole blocks are named, as a cache holds only those.
 */
function promptBlocks(req: LlmRequest): PrefixBlocks {
  const blockTokens = req.prefix?.blockTokens ?? PROMPT_BLOCK_TOKENS;
  const whole = Math.floor(req.inputTokens / blockTokens);
  const hashes = (req.prefix?.hashes ?? []).slice(0, whole);
  for (let i = hashes.length; i < whole; i++) hashes.push(`n:${req.id}:${i}`);
  return { blockTokens, hashes };
}

function cappedOutput(req: LlmRequest): number {
  return req.maxTokens === undefined ? req.outputTokens : Math.min(req.outputTokens, req.maxTokens);
}
