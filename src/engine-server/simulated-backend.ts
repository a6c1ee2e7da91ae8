/**
 * The simulated engine apart from HTTP: one `ReplicaDriver` on an injected clock, and per
 * request a `Generation` whose tokens arrive when the engine emits them. The engine server puts
 * HTTP in front of it; the gateway can embed it in-process. Main rule: a request is either
 * rejected at `submit` (a reason from a closed set, nothing queued) or accepted and then ends
 * exactly once — finished, cancelled or crashed — with its KV freed in the engine at that moment.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { Rng } from '../core/ports/rng.ts';
import type { Timers } from '../core/ports/timers.ts';
import type { PrefixBlocks } from '../core/request/request.ts';
import type { Ms } from '../core/request/units.ts';
import type { EngineStats } from '../engine/engine-stats.ts';
import type { EngineConfig, FailReason, ReplicaLoad } from '../engine/engine-types.ts';
import { ReplicaDriver } from '../engine/replica-driver.ts';
import type { TimingProfile } from '../engine/timing/profile.ts';
import { type Generation, Job, type JobHost } from './generation.ts';
import {
  type DrawnFaults,
  type FaultRates,
  type FillerFinish,
  type LengthSampler,
  RequestPlanner,
} from './request-plan.ts';

export interface GenerationRequest {
  readonly promptTokens: number;
  readonly maxTokens?: number;
  readonly ignoreEos: boolean;
  /** vLLM's min_tokens: no end of sequence before this many. */
  readonly minTokens?: number;
  /** vLLM's stop strings, and whether the one met stays in the text. */
  readonly stops?: readonly string[];
  readonly keepStop?: boolean;
  readonly prefix?: PrefixBlocks;
  /** The LoRA adapter asked for (one of the engine's `loraModules`); the base model when absent. */
  readonly adapter?: string;
  /** vLLM's request priority (lower is served first) under `--scheduling-policy priority`. */
  readonly priority?: number;
  /** A text completion's `echo`: the prompt, which its first token's text starts with. */
  readonly echo?: string;
  /**
   * Its prompt staged in pieces of this many tokens (`core/routing/staged-prefill.ts`): an
   * in-process engine is told the pieces its host would send (`EngineRequest.pieceTokens`).
   */
  readonly pieceTokens?: number;
}

export type RejectReason =
  | FailReason
  | 'output_exceeds_max_model_len'
  | 'injected_failure'
  | 'shutting_down'
  /** Several choices under a V0 engine version, whose sequence groups the model has not. */
  | 'choices_unsupported';

export type SubmitResult =
  | { readonly ok: true; readonly generation: Generation }
  | { readonly ok: false; readonly reason: RejectReason };

/** How an accepted request ended: vLLM's finished_reason values. */
export type EndReason = FillerFinish | 'abort';

/** Request-level timings as they happen, for histograms (vLLM's definitions, in ms). */
/**
 * A request's end, in vLLM's request-level terms: queued from arrival until first scheduled,
 * prefill from then to its first token, decode from there to its last, inference the two; each
 * undefined where the request never got that far.
 */
export interface EndedRequest {
  readonly e2eMs: Ms;
  readonly queueMs?: Ms;
  readonly prefillMs?: Ms;
  readonly decodeMs?: Ms;
  readonly inferenceMs?: Ms;
  readonly promptTokens: number;
  readonly generationTokens: number;
}

export interface BackendObserver {
  firstToken(ttftMs: Ms): void;
  tokenGap(itlMs: Ms): void;
  ended(reason: EndReason, request: EndedRequest): void;
}

export interface BackendCounters {
  /** Prompt tokens of requests whose prefill completed. */
  promptTokens: number;
  ended: Record<EndReason, number>;
}

export interface SimulatedBackendOptions {
  readonly config: EngineConfig;
  readonly profile: TimingProfile;
  readonly clock: Clock;
  readonly timers: Timers;
  readonly rng: Rng;
  readonly faults: FaultRates;
  readonly lengths: LengthSampler;
  readonly observer?: BackendObserver;
}

export class SimulatedBackend implements JobHost {
  readonly clock: Clock;
  readonly timers: Timers;
  readonly config: EngineConfig;
  private readonly driver: ReplicaDriver<Job>;
  private readonly planner: RequestPlanner;
  private readonly observer: BackendObserver | undefined;
  private readonly live = new Set<Job>();
  private readonly lastTokenMs = new Map<Job, Ms>();
  private readonly counts: BackendCounters = {
    promptTokens: 0,
    ended: { stop: 0, length: 0, abort: 0 },
  };
  private nextId = 0;
  private closed = false;
  /** Draining: no request is accepted, those accepted run on (`drain`). */
  private draining = false;
  /** Told once no accepted request is left (`whenIdle`). */
  private idle: (() => void)[] = [];

  constructor(opts: SimulatedBackendOptions) {
    this.clock = opts.clock;
    this.timers = opts.timers;
    this.config = opts.config;
    this.observer = opts.observer;
    this.planner = new RequestPlanner(opts.rng, opts.faults, opts.lengths);
    this.driver = new ReplicaDriver<Job>({
      config: opts.config,
      profile: opts.profile,
      clock: opts.clock,
      timers: opts.timers,
      listener: {
        onPrefillStart: (job, at) => void (job.prefillStartMs ??= at),
        onFirstToken: (job, at, stepStart, cached) => {
          job.firstStep = { startMs: stepStart, endMs: at };
          job.cachedTokens = cached;
          job.token(0, at);
        },
        onToken: (job, at, index) => job.token(index, at),
        onFinish: (job, at) => job.finish(at),
        onPreempt: () => {},
        onFail: (job, _at, reason) => job.fail(reason),
      },
    });
  }

  get maxModelLen(): number {
    return this.config.maxModelLen;
  }

  /** One request's injected faults: a request of several choices draws them once (choices.ts). */
  drawFaults(): DrawnFaults {
    return this.planner.drawFaults();
  }

  /** Accepts `req` (one choice), hit by `faults` (by default, its own draw), or says why not. */
  submit(req: GenerationRequest, faults: DrawnFaults = this.drawFaults()): SubmitResult {
    const plan = this.planner.plan({ ...req, maxModelLen: this.maxModelLen }, faults);
    if (this.closed || this.draining) return { ok: false, reason: 'shutting_down' };
    const room = this.maxModelLen - req.promptTokens;
    if (req.maxTokens !== undefined && room > 0 && req.maxTokens > room)
      return { ok: false, reason: 'output_exceeds_max_model_len' };
    if (plan.fail) return { ok: false, reason: 'injected_failure' };
    const job = new Job(`req-${this.nextId++}`, req, plan, this);
    if (!this.driver.add(job)) return { ok: false, reason: job.failReason ?? 'shutting_down' };
    this.live.add(job);
    return { ok: true, generation: job };
  }

  load(): ReplicaLoad {
    return this.driver.load();
  }

  /** `ReplicaCore.loraInfo`: adapters resident and waited for; null with no adapter served. */
  loraInfo(): ReturnType<ReplicaDriver<Job>['core']['loraInfo']> {
    return this.driver.core.loraInfo();
  }

  stats(): EngineStats {
    return this.driver.stats();
  }

  counters(): Readonly<BackendCounters> {
    return this.counts;
  }

  /** Accepted requests not yet ended. */
  get inFlight(): number {
    return this.live.size;
  }

  /** Accepts no more requests (each refused `shutting_down`); those accepted run to their end. */
  drain(): void {
    this.draining = true;
  }

  /** Resolves once no accepted request is left: at once when none is. */
  whenIdle(): Promise<void> {
    if (this.live.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Stops the engine; streams still open end without a finish. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.driver.close();
    for (const job of this.live) job.drop();
    this.live.clear();
    this.lastTokenMs.clear();
    this.toldIdle();
  }

  private toldIdle(): void {
    if (this.live.size === 0) for (const told of this.idle.splice(0)) told();
  }

  // JobHost: called by jobs as the engine drives them.

  tokenAt(job: Job, index: number, atMs: Ms): void {
    if (index === 0) {
      this.counts.promptTokens += job.promptTokens;
      this.observer?.firstToken(atMs - job.arrivalMs);
    } else {
      const last = this.lastTokenMs.get(job);
      if (last !== undefined) this.observer?.tokenGap(atMs - last);
    }
    this.lastTokenMs.set(job, atMs);
  }

  finished(job: Job, reason: FillerFinish, atMs: Ms): void {
    this.end(job, reason, atMs);
  }

  abort(job: Job): void {
    this.driver.cancel(job.id);
    this.end(job, 'abort', this.clock.now());
  }

  private end(job: Job, reason: EndReason, atMs: Ms): void {
    if (!this.live.delete(job)) return;
    this.toldIdle();
    const lastMs = this.lastTokenMs.get(job);
    this.lastTokenMs.delete(job);
    this.counts.ended[reason]++;
    const scheduled = job.prefillStartMs;
    const first = job.firstStep?.endMs;
    this.observer?.ended(reason, {
      e2eMs: atMs - job.arrivalMs,
      ...(scheduled === undefined ? {} : { queueMs: scheduled - job.arrivalMs }),
      ...(first === undefined || scheduled === undefined ? {} : { prefillMs: first - scheduled }),
      ...(first === undefined || lastMs === undefined ? {} : { decodeMs: lastMs - first }),
      ...(scheduled === undefined || lastMs === undefined
        ? {}
        : { inferenceMs: lastMs - scheduled }),
      promptTokens: job.promptTokens,
      generationTokens: job.tokensOut,
    });
  }
}
