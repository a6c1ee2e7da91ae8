/**
 * One request inside the simulated backend: the engine's request object and, to the caller, an
 * async iterable of its events — a `token` per generated token, then `finish`; or `crash` when
 * an injected fault cuts it. Main rule: `cancel()` takes effect at once, wherever the request
 * is (queued, prefilling, decoding, or paused by a stall): the engine frees its KV in the same
 * call and the stream ends; stopping the iteration early cancels it the same way.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import type { TtftParts } from '../core/observe/request-outcome.ts';
import type { PrefixBlocks } from '../core/request/request.ts';
import type { Ms } from '../core/request/units.ts';
import type { EngineRequest, FailReason } from '../engine/engine-types.ts';
import { EventChannel } from './event-channel.ts';
import { fillerPiece } from './filler-text.ts';
import { keptPiece } from './stop-strings.ts';
import type { FillerFinish, RequestPlan } from './request-plan.ts';
import type { GenerationRequest } from './simulated-backend.ts';

export type GenerationEvent =
  | {
      readonly type: 'token';
      readonly index: number;
      readonly text: string;
      readonly atMs: Ms;
      /**
       * Its sequence's last token: the finish it ends with, which vLLM sends in the same chunk
       * (the finish event follows all the same, with the counts).
       */
      readonly last?: FillerFinish;
    }
  | {
      readonly type: 'finish';
      readonly reason: FillerFinish;
      readonly completionTokens: number;
      readonly atMs: Ms;
    }
  /** Injected fault: the connection must drop now; no finish follows. */
  | { readonly type: 'crash'; readonly completionTokens: number; readonly atMs: Ms };

export interface Generation extends AsyncIterable<GenerationEvent> {
  readonly id: string;
  readonly promptTokens: number;
  /** The prompt's tokens its prefix cache served: known once its first token is out, 0 before. */
  readonly cachedTokens: number;
  /** How the engine spent its time to first token (from arrival in the engine); known once the first token is out. */
  ttftParts(): TtftParts | undefined;
  /** Frees the request in the engine now and ends the stream; idempotent. */
  cancel(): void;
}

/** What a job needs from its backend. */
export interface JobHost {
  readonly clock: Clock;
  readonly timers: Timers;
  /** The job ended before finishing (client gone, or crashed): drop it from the engine. */
  abort(job: Job): void;
  finished(job: Job, reason: FillerFinish, atMs: Ms): void;
  tokenAt(job: Job, index: number, atMs: Ms): void;
}

export class Job implements EngineRequest, Generation {
  readonly id: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly prefix?: PrefixBlocks;
  /** The LoRA adapter it runs with (the request's model, when that names one). */
  readonly adapter?: string;
  /** vLLM's request priority: read under `--scheduling-policy priority`, 0 when absent. */
  readonly priority?: number;
  /** Its prompt staged in pieces of this many tokens (`EngineRequest.pieceTokens`). */
  readonly pieceTokens?: number;
  readonly plan: RequestPlan;
  readonly arrivalMs: Ms;
  failReason: FailReason | null = null;
  private readonly host: JobHost;
  private readonly channel = new EventChannel<GenerationEvent>();
  private emitted = 0;
  /** Characters of filler its tokens have carried so far (a stop string's cut is counted in them). */
  private chars = 0;
  private live = true;
  /** Cancelled or dropped: nothing more is delivered, a pending stall ends at once. */
  private halted = false;
  private stall: { timer: TimerHandle; resume: () => void } | null = null;
  private iterated = false;
  /** The prompt text its first token carries before its own (`echo`), until that token is out. */
  private echo: string | undefined;

  constructor(id: string, req: GenerationRequest, plan: RequestPlan, host: JobHost) {
    this.id = id;
    this.adapter = req.adapter;
    this.priority = req.priority;
    this.pieceTokens = req.pieceTokens;
    this.inputTokens = req.promptTokens;
    this.outputTokens = plan.outputTokens;
    this.plan = plan;
    this.host = host;
    this.prefix = req.prefix;
    this.echo = req.echo;
    this.arrivalMs = host.clock.now();
  }

  get promptTokens(): number {
    return this.inputTokens;
  }

  /** Tokens it has emitted so far. */
  get tokensOut(): number {
    return this.emitted;
  }

  get active(): boolean {
    return this.live;
  }

  /** The first step that held its prefill (a restart after preemption keeps the first). */
  prefillStartMs: Ms | undefined;
  /** The prompt's tokens its prefix cache served, set with its first token. */
  cachedTokens = 0;
  /** The step that emitted its first token: [start, end). */
  firstStep: { readonly startMs: Ms; readonly endMs: Ms } | undefined;

  ttftParts(): TtftParts | undefined {
    const prefill = this.prefillStartMs;
    const step = this.firstStep;
    if (prefill === undefined || step === undefined) return undefined;
    return {
      queueMs: prefill - this.arrivalMs,
      prefillMs: step.startMs - prefill,
      firstDecodeMs: step.endMs - step.startMs,
    };
  }

  /** The engine emitted token `index` at `atMs`. */
  token(index: number, atMs: Ms): void {
    if (!this.live) return;
    this.emitted++;
    this.host.tokenAt(this, index, atMs);
    const echo = this.echo;
    this.echo = undefined;
    const filler = fillerPiece(index);
    const piece = keptPiece(filler, this.chars, this.plan.cut);
    this.chars += filler.length;
    const text = echo === undefined ? piece : echo + piece;
    const crashes = this.emitted === this.plan.crashAfter;
    const last =
      this.emitted === this.outputTokens && !crashes ? this.plan.finishReason : undefined;
    this.channel.push({
      type: 'token',
      index,
      text,
      atMs,
      ...(last === undefined ? {} : { last }),
    });
    if (crashes) {
      this.channel.push({ type: 'crash', completionTokens: this.emitted, atMs });
      this.stop();
    }
  }

  finish(atMs: Ms): void {
    if (!this.live) return;
    this.live = false;
    const reason = this.plan.finishReason;
    this.host.finished(this, reason, atMs);
    this.channel.push({ type: 'finish', reason, completionTokens: this.emitted, atMs });
    this.channel.end();
  }

  cancel(): void {
    if (!this.live) return;
    this.stop();
  }

  /** Ended by the engine without a token (it could not serve the prompt). */
  fail(reason: FailReason): void {
    this.failReason = reason;
    this.live = false;
    this.channel.end();
  }

  /** Closes the stream without touching the engine (the backend is shutting down). */
  drop(): void {
    this.live = false;
    this.halted = true;
    this.resumeStall();
    this.channel.end();
  }

  [Symbol.asyncIterator](): AsyncIterator<GenerationEvent> {
    if (this.iterated) throw new Error(`generation ${this.id}: its events can be read once`);
    this.iterated = true;
    return this.events();
  }

  private stop(): void {
    this.live = false;
    this.halted = true;
    this.host.abort(this);
    this.resumeStall();
    this.channel.end();
  }

  private async *events(): AsyncGenerator<GenerationEvent> {
    try {
      for (;;) {
        const r = await this.channel.next();
        if (r.done) return;
        if (r.value.type === 'token' && r.value.index === this.plan.stallBefore) {
          await this.pause(this.host.clock.now() + this.plan.stallMs);
          if (this.halted) return;
        }
        yield r.value;
      }
    } finally {
      this.cancel();
    }
  }

  /** The injected stall: delivery waits, the engine does not (tokens queue meanwhile). */
  private pause(untilMs: Ms): Promise<void> {
    if (this.halted) return Promise.resolve();
    return new Promise((resolve) => {
      const resume = () => {
        this.stall = null;
        resolve();
      };
      this.stall = { timer: this.host.timers.at(untilMs, resume), resume };
    });
  }

  private resumeStall(): void {
    const s = this.stall;
    if (s === null) return;
    s.timer.cancel();
    s.resume();
  }
}
