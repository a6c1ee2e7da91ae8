/**
 * The pure, synchronous model of one continuous-batching replica. A driver alternates
 * `startStep(now)` (plan the next iteration, get its duration) and `finishStep(now)` (apply
 * it: emit tokens, finish sequences) and calls `add`/`cancel` at any time. Events go straight
 * to the listener with the driver's own request object, in a deterministic order: at step
 * start, prefill starts and preemptions in planning order; at step end, per running sequence
 * in admission order, its token and then its finish — or, for a listener that takes decode
 * tokens in runs (token-runs.ts), a run's tokens when it ends. The core never reads a clock.
 */
import type { Ms, Tokens } from '../core/request/units.ts';
import type {
  EngineConfig,
  EngineListener,
  EngineRequest,
  FailReason,
  ReplicaLoad,
} from './engine-types.ts';
import { type EngineStats, createStats } from './engine-stats.ts';
import { kvBytesPerToken } from './hardware.ts';
import { EngineInvariantError } from './invariant.ts';
import { resolveCpuBlocks, resolveGpuBlocks } from './kv-capacity.ts';
import { KvCacheManager } from './kv-cache-manager.ts';
import { LiveTotals, type LiveWork } from './live-totals.ts';
import { Scheduler } from './scheduler.ts';
import { StepCosts } from './step-costs.ts';
import { Seq, SeqState, contextLimits, prefillRemaining } from './sequence.ts';
import { DETACHED, type SteadyDecodes, steadyAllowed } from './steady-decodes.ts';
import { TokenRuns } from './token-runs.ts';
import { ToolPauses } from './tool-pauses.ts';
import { type StepShape, type TimingProfile, clearShape, emptyShape } from './timing/profile.ts';

export class ReplicaCore<R extends EngineRequest> {
  readonly config: EngineConfig;
  readonly kv: KvCacheManager;
  readonly scheduler: Scheduler<R>;
  private readonly profile: TimingProfile;
  private readonly listener: EngineListener<R>;
  private readonly shape: StepShape = emptyShape();
  private readonly byId = new Map<string, Seq<R>>();
  private readonly swapMsPerBlock: Ms;
  private readonly tools: ToolPauses<R>;
  private readonly counters: EngineStats = createStats();
  private readonly live = new LiveTotals();
  private inFlight = false;
  private stepStartMs: Ms = 0;
  /** Running sequences cancelled while a step was in flight, still in the running list. */
  private cancelledInFlight = 0;
  /** Decode tokens in runs, for a listener that takes them so; null: each token reported. */
  private readonly runs: TokenRuns<R> | null;
  /** Decode tokens the step being finished added to runs. */
  private continuing = 0;

  constructor(config: EngineConfig, profile: TimingProfile, listener: EngineListener<R>) {
    this.config = config;
    this.profile = profile;
    this.listener = listener;
    this.runs = listener.onTokenRun === undefined ? null : new TokenRuns(listener);
    this.kv = new KvCacheManager(
      resolveGpuBlocks(config),
      resolveCpuBlocks(config),
      config.blockSize,
      config.enablePrefixCaching,
    );
    if (this.kv.cache !== null && listener.onKvEvent !== undefined) {
      this.kv.cache.events = (kind, hash) => listener.onKvEvent?.(kind, hash);
    }
    // Each GPU moves its own KV shard over its own host link, in parallel.
    const blockBytes = config.blockSize * kvBytesPerToken(config.model);
    this.swapMsPerBlock = blockBytes / (config.gpu.hostLinkBytesPerMs * config.tp);
    this.scheduler = new Scheduler<R>(
      config,
      this.kv,
      this.counters,
      new StepCosts(profile, this.swapMsPerBlock),
      this.runs !== null && steadyAllowed(config),
    );
    this.tools = new ToolPauses(
      config,
      this.kv,
      this.scheduler,
      this.counters,
      listener,
      this.runs,
    );
  }

  /** What the live sequences hold still to do (`LiveTotals`), without walking them. */
  liveWork(): LiveWork {
    // Mid-step (a listener asking), the steady head's tokens of this step are not yet counted.
    const uncounted = this.scheduler.steady?.takenUncounted() ?? 0;
    return this.live.work(this.counters.tokensGenerated + uncounted);
  }

  /** Every live sequence: running, waiting, or paused for a tool call (audits). */
  sequences(): IterableIterator<Seq<R>> {
    this.scheduler.steady?.sync();
    return this.byId.values();
  }

  get totalBlocks(): number {
    return this.kv.pool.totalBlocks;
  }

  /** Nothing running (but paused), waiting or in flight. */
  get idle(): boolean {
    return !this.inFlight && this.scheduler.activeRunning === 0 && this.scheduler.numWaiting === 0;
  }

  get stepping(): boolean {
    return this.inFlight;
  }

  /**
   * Queues a request, or fails it at once (onFail, returns false) when it can never run: a
   * prompt of maxModelLen tokens or more, or a sequence whose full KV (prompt, tool results and
   * output − 1 tokens) exceeds the whole pool. An output that would run past maxModelLen is
   * capped there, as vLLM does when the client sets no max_tokens (`contextLimits`).
   */
  add(req: R, nowMs: Ms): boolean {
    if (!(req.inputTokens >= 1 && req.outputTokens >= 1)) {
      throw new EngineInvariantError(`engine: request ${req.id} needs ≥ 1 input and output token`);
    }
    if (this.byId.has(req.id))
      throw new EngineInvariantError(`engine: duplicate request id ${req.id}`);
    if (req.inputTokens >= this.config.maxModelLen) {
      return this.fail(req, nowMs, 'prompt_exceeds_max_model_len');
    }
    const { output, toolTokens } = contextLimits(req, this.config.maxModelLen);
    if (this.kv.blocksFor(req.inputTokens + toolTokens + output - 1) > this.kv.pool.totalBlocks) {
      return this.fail(req, nowMs, 'prompt_exceeds_kv_capacity');
    }
    const s = new Seq<R>(req, output, this.config.blockSize, this.config.enablePrefixCaching);
    this.byId.set(req.id, s);
    this.live.added(s);
    this.scheduler.enqueue(s);
    return true;
  }

  /**
   * Drops a request wherever it is and frees its memory now; returns false if unknown (already
   * finished, failed or cancelled). A sequence in the step in flight stays part of that step's
   * cost but emits nothing more.
   */
  cancel(id: string, _nowMs: Ms): boolean {
    const s = this.byId.get(id);
    if (s === undefined) return false;
    const sch = this.scheduler;
    // A member of the steady head leaves it with its real counts, not through the running list.
    const steady = sch.steady?.remove(s) ?? false;
    this.runs?.end(s);
    this.byId.delete(id);
    this.live.ended(s);
    sch.pendingPrefill -= prefillRemaining(s);
    this.counters.cancelled++;
    if (s.state === SeqState.Running) {
      this.kv.freeSeq(s);
      sch.numRunning--;
      if (s.paused || s.held) sch.unmarkIdle();
      s.state = SeqState.Cancelled;
      if (steady) return true;
      if (this.inFlight) this.cancelledInFlight++;
      else sch.running.splice(sch.running.indexOf(s), 1);
    } else {
      if (s.state === SeqState.Swapped) this.kv.releaseHost(s);
      // A sequence paused out of the batch waits nowhere until it resumes.
      if (!s.paused) sch.numWaiting--;
      s.state = SeqState.Cancelled;
    }
    return true;
  }

  /** Plans the next step if there is work; returns its duration, or null when idle. */
  startStep(nowMs: Ms): Ms | null {
    if (this.inFlight)
      throw new EngineInvariantError('engine: startStep while a step is in flight');
    const sch = this.scheduler;
    if (sch.numRunning === 0 && sch.numWaiting === 0) {
      this.checkIdle();
      return null;
    }
    const shape = this.shape;
    clearShape(shape);
    if (sch.schedule(shape, nowMs) === 0) {
      // Every sequence left is paused for a tool call: idle until one resumes.
      if (sch.numWaiting === 0 && sch.activeRunning === 0) return null;
      throw new EngineInvariantError(`engine: ${sch.numWaiting} waiting but nothing schedulable`);
    }
    const durationMs =
      this.profile.stepMs(shape) + sch.swapBlocks * this.swapMsPerBlock + sch.loraLoadMs;
    this.inFlight = true;
    this.stepStartMs = nowMs;
    this.counters.steps++;
    this.counters.busyMs += durationMs;
    sch.flushEvents(this.listener, nowMs, this.runs);
    return durationMs;
  }

  /**
   * Nothing running or waiting: every live sequence must be paused for a tool call (its resume
   * brings it back). Any other would never run again — lost, and the driver waiting on it for
   * ever — so it is an invariant error, named.
   */
  private checkIdle(): void {
    if (this.byId.size === 0) return;
    for (const s of this.byId.values()) {
      if (!s.paused) {
        throw new EngineInvariantError(
          `engine: ${s.req.id} is neither running, waiting nor paused: it would never end`,
        );
      }
    }
  }

  /** Applies the step in flight as of `nowMs`, its end. */
  finishStep(nowMs: Ms): void {
    if (!this.inFlight)
      throw new EngineInvariantError('engine: finishStep without a step in flight');
    const { counters, runs } = this;
    const sch = this.scheduler;
    const running = sch.running;
    runs?.stepEnded(nowMs);
    this.continuing = 0;
    const steady = sch.steady;
    let detached = false;
    if (steady !== null && steady.planned) {
      // The steady head, in admission order: only members with an event take theirs one by one.
      for (let s = steady.nextEvent(); s !== undefined; s = steady.nextEvent()) {
        s.sched = 1;
        this.applyStep(s, nowMs);
        steady.afterEvent(s);
        if (s.steadyOrd === DETACHED) detached = true;
      }
      const took = steady.finishStep();
      counters.tokensGenerated += took;
      this.continuing += took;
    }
    const n = running.length;
    let w = 0;
    for (let i = 0; i < n; i++) {
      const s = running[i];
      if (s.state !== SeqState.Running) continue;
      if (s.sched === 0) {
        // Not in this step: its run of tokens ends.
        if (runs !== null && s.runTo > s.runFrom) runs.end(s);
        running[w++] = s;
        continue;
      }
      if (this.applyStep(s, nowMs)) running[w++] = s;
    }
    running.length = w;
    this.inFlight = false;
    runs?.stepTokens(nowMs, this.continuing);
    if (this.cancelledInFlight > 0) {
      // Some were cancelled by listeners after this loop had kept them.
      let k = 0;
      for (let i = 0; i < running.length; i++) {
        if (running[i].state === SeqState.Running) running[k++] = running[i];
      }
      running.length = k;
      this.cancelledInFlight = 0;
    }
    if (steady === null || runs === null) return;
    // A member paused in the batch: the head is no longer only decoding.
    if (detached) steady.dissolve(running);
    else this.joinSteady(steady, runs.step);
  }

  /**
   * Applies the step to `s`, which was in it (`sched` tokens): its prompt chunk, or its token
   * and what follows — its finish, its tool call. Returns whether it stays in the batch.
   */
  private applyStep(s: Seq<R>, nowMs: Ms): boolean {
    const { listener, kv, counters, runs } = this;
    const sch = this.scheduler;
    const t = s.sched;
    s.sched = 0;
    s.computed += t;
    if (s.prefilling) {
      sch.pendingPrefill -= t;
      counters.prefillTokens += t;
      if (s.cacheNext < s.cacheLimit) kv.commit(s);
      if (s.computed < s.target) return true;
      s.prefilling = false;
      if (s.emitted === 0) listener.onFirstToken(s.req, nowMs, this.stepStartMs, s.cachedTokens);
      else listener.onToken(s.req, nowMs, s.emitted);
      runs?.start(s);
    } else if (runs === null) {
      listener.onToken(s.req, nowMs, s.emitted);
    } else if (runs.continues(s)) {
      runs.extend(s);
      this.continuing++;
    } else {
      runs.end(s);
      listener.onToken(s.req, nowMs, s.emitted);
      runs.start(s);
    }
    // A listener may have cancelled it while handling its token.
    if (s.state !== SeqState.Running) return false;
    s.emitted++;
    counters.tokensGenerated++;
    if (s.emitted < s.output) return !(s.emitted >= s.pauseAt && this.tools.pause(s, nowMs));
    s.state = SeqState.Done;
    kv.freeSeq(s);
    sch.numRunning--;
    this.byId.delete(s.req.id);
    this.live.ended(s);
    counters.finished++;
    runs?.end(s);
    listener.onFinish(s.req, nowMs);
    return false;
  }

  /** Sequences at the running list's head that only decode now join the steady head. */
  private joinSteady(steady: SteadyDecodes<R>, step: number): void {
    const running = this.scheduler.running;
    let m = 0;
    while (m < running.length && steady.eligible(running[m], step)) m++;
    if (m === 0) return;
    for (let i = 0; i < m; i++) steady.join(running[i], step + 1);
    running.splice(0, m);
  }

  /** Pauses begun since the last call, each with when its tool call returns: the driver's timers. */
  takePauses(): readonly { id: string; atMs: Ms }[] {
    return this.tools.take();
  }

  /**
   * The tool call of `id` returned at `nowMs`: its sequence goes on (`ToolPauses.resume`).
   * False if it is gone (cancelled) or not paused.
   */
  resume(id: string, nowMs: Ms): boolean {
    const s = this.byId.get(id);
    if (s === undefined || !s.paused) return false;
    const before = s.toolTokens;
    this.tools.resume(s, nowMs);
    this.live.grew(s.toolTokens - before);
    return true;
  }

  /**
   * Prompt tokens of `req` this replica's prefix cache holds now: what its prefill would skip
   * were it admitted at once (the cache may change before it is). Reads the cache, changes nothing.
   */
  cachedPromptTokens(req: R): Tokens {
    const cache = this.kv.cache;
    if (cache === null || req.prefix === undefined) return 0;
    const s = new Seq<R>(req, 1, this.config.blockSize, this.config.enablePrefixCaching);
    if (s.cacheLimit === 0) return 0;
    // At least one prompt token is computed, as at admission.
    const most = Math.min(s.cacheLimit, Math.floor((s.target - 1) / s.entryTokens));
    return cache.peek(s.hashes, s.stride, most) * s.entryTokens;
  }

  load(): ReplicaLoad {
    const sch = this.scheduler;
    const load: { -readonly [K in keyof ReplicaLoad]: ReplicaLoad[K] } = {
      running: sch.numRunning,
      waiting: sch.numWaiting,
      kvUsedBlocks: this.kv.pool.usedBlocks,
      kvTotalBlocks: this.kv.pool.totalBlocks,
      pendingPrefillTokens: sch.pendingPrefill,
    };
    // Set, not spread in: read for every replica on every placement, this stays a plain literal.
    if (sch.lora !== null) load.loras = sch.lora.residentAdapters;
    return load;
  }

  /**
   * vLLM's `lora_requests_info`: the adapters running requests use, those waiting requests ask
   * for, and the slot count; null when no adapter is served. vLLM counts them by request: an
   * adapter still in a GPU slot with no request running on it is not in the label
   * (`load().loras` is what the slots hold).
   */
  loraInfo(): { running: string[]; waiting: string[]; maxLoras: number } | null {
    const lora = this.scheduler.lora;
    if (lora === null) return null;
    const running = new Set<string>();
    const waiting = new Set<string>();
    for (const s of this.byId.values()) {
      const adapter = s.req.adapter;
      if (adapter === undefined) continue;
      if (s.state === SeqState.Running) running.add(adapter);
      else if (s.state === SeqState.Waiting) waiting.add(adapter);
    }
    return { running: [...running], waiting: [...waiting], maxLoras: lora.maxLoras };
  }

  stats(): EngineStats {
    const evicted = this.kv.cache?.stats.evictedBlocks ?? 0;
    return { ...this.counters, prefixEvictedBlocks: evicted };
  }

  private fail(req: R, nowMs: Ms, reason: FailReason): false {
    this.counters.failed++;
    this.listener.onFail(req, nowMs, reason);
    return false;
  }
}
