/**
 * The pure, synchronous model of one continuous-batching replica. A driver alternates
 * `startStep(now)` (plan the next iteration, get its duration) and `finishStep(now)` (apply
 * it: emit tokens, finish sequences) and calls `add`/`cancel` at any time. Events go straight
 * to the listener with the driver's own request object, in a deterministic order: at step
 * start, prefill starts and preemptions in planning order; at step end, per running sequence
 * in admission order, its token and then its finish. The core never reads a clock.
 */
import type { Ms } from '../core/request/units.ts';
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
import { Scheduler } from './scheduler.ts';
import { Seq, SeqState, prefillRemaining } from './sequence.ts';
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
  private readonly counters: EngineStats = createStats();
  private inFlight = false;
  private stepStartMs: Ms = 0;
  /** Running sequences cancelled while a step was in flight, still in the running list. */
  private cancelledInFlight = 0;

  constructor(config: EngineConfig, profile: TimingProfile, listener: EngineListener<R>) {
    this.config = config;
    this.profile = profile;
    this.listener = listener;
    this.kv = new KvCacheManager(
      resolveGpuBlocks(config),
      resolveCpuBlocks(config),
      config.blockSize,
      config.enablePrefixCaching,
    );
    // Each GPU moves its own KV shard over its own host link, in parallel.
    const blockBytes = config.blockSize * kvBytesPerToken(config.model);
    this.swapMsPerBlock = blockBytes / (config.gpu.hostLinkBytesPerMs * config.tp);
    this.scheduler = new Scheduler<R>(
      config,
      this.kv,
      this.counters,
      (shape) => profile.stepMs(shape),
      { swapMsPerBlock: this.swapMsPerBlock },
    );
  }

  get totalBlocks(): number {
    return this.kv.pool.totalBlocks;
  }

  /** Nothing running, waiting or in flight. */
  get idle(): boolean {
    return !this.inFlight && this.scheduler.numRunning === 0 && this.scheduler.numWaiting === 0;
  }

  get stepping(): boolean {
    return this.inFlight;
  }

  /**
   * Queues a request, or fails it at once (onFail, returns false) when it can never run: a
   * prompt of maxModelLen tokens or more, or a sequence whose full KV (prompt + output − 1
   * tokens) exceeds the whole pool. An output that would run past maxModelLen is capped there,
   * as vLLM does when the client sets no max_tokens.
   */
  add(req: R, nowMs: Ms): boolean {
    if (!(req.inputTokens >= 1 && req.outputTokens >= 1)) {
      throw new EngineInvariantError(`engine: request ${req.id} needs ≥ 1 input and output token`);
    }
    if (this.byId.has(req.id))
      throw new EngineInvariantError(`engine: duplicate request id ${req.id}`);
    const maxLen = this.config.maxModelLen;
    if (req.inputTokens >= maxLen) return this.fail(req, nowMs, 'prompt_exceeds_max_model_len');
    const output = Math.min(req.outputTokens, maxLen - req.inputTokens);
    if (this.kv.blocksFor(req.inputTokens + output - 1) > this.kv.pool.totalBlocks) {
      return this.fail(req, nowMs, 'prompt_exceeds_kv_capacity');
    }
    const s = new Seq<R>(req, output, this.config.blockSize, this.config.enablePrefixCaching);
    this.byId.set(req.id, s);
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
    this.byId.delete(id);
    const sch = this.scheduler;
    sch.pendingPrefill -= prefillRemaining(s);
    this.counters.cancelled++;
    if (s.state === SeqState.Running) {
      this.kv.freeSeq(s);
      sch.numRunning--;
      s.state = SeqState.Cancelled;
      if (this.inFlight) this.cancelledInFlight++;
      else sch.running.splice(sch.running.indexOf(s), 1);
    } else {
      if (s.state === SeqState.Swapped) this.kv.releaseHost(s);
      sch.numWaiting--;
      s.state = SeqState.Cancelled;
    }
    return true;
  }

  /** Plans the next step if there is work; returns its duration, or null when idle. */
  startStep(nowMs: Ms): Ms | null {
    if (this.inFlight)
      throw new EngineInvariantError('engine: startStep while a step is in flight');
    const sch = this.scheduler;
    if (sch.numRunning === 0 && sch.numWaiting === 0) return null;
    const shape = this.shape;
    clearShape(shape);
    if (sch.schedule(shape) === 0) {
      throw new EngineInvariantError(`engine: ${sch.numWaiting} waiting but nothing schedulable`);
    }
    const durationMs = this.profile.stepMs(shape) + sch.swapBlocks * this.swapMsPerBlock;
    this.inFlight = true;
    this.stepStartMs = nowMs;
    this.counters.steps++;
    this.counters.busyMs += durationMs;
    sch.flushEvents(this.listener, nowMs);
    return durationMs;
  }

  /** Applies the step in flight as of `nowMs`, its end. */
  finishStep(nowMs: Ms): void {
    if (!this.inFlight)
      throw new EngineInvariantError('engine: finishStep without a step in flight');
    const { listener, kv, counters } = this;
    const sch = this.scheduler;
    const running = sch.running;
    const n = running.length;
    let w = 0;
    for (let i = 0; i < n; i++) {
      const s = running[i];
      if (s.state !== SeqState.Running) continue;
      const t = s.sched;
      if (t === 0) {
        running[w++] = s;
        continue;
      }
      s.sched = 0;
      s.computed += t;
      if (s.prefilling) {
        sch.pendingPrefill -= t;
        counters.prefillTokens += t;
        if (s.cacheNext < s.cacheLimit) kv.commit(s);
        if (s.computed < s.target) {
          running[w++] = s;
          continue;
        }
        s.prefilling = false;
        if (s.emitted === 0) listener.onFirstToken(s.req, nowMs, this.stepStartMs, s.cachedTokens);
        else listener.onToken(s.req, nowMs, s.emitted);
      } else {
        listener.onToken(s.req, nowMs, s.emitted);
      }
      // A listener may have cancelled it while handling its token.
      if (s.state !== SeqState.Running) continue;
      s.emitted++;
      counters.tokensGenerated++;
      if (s.emitted < s.output) {
        running[w++] = s;
        continue;
      }
      s.state = SeqState.Done;
      kv.freeSeq(s);
      sch.numRunning--;
      this.byId.delete(s.req.id);
      counters.finished++;
      listener.onFinish(s.req, nowMs);
    }
    running.length = w;
    this.inFlight = false;
    if (this.cancelledInFlight > 0) {
      // Some were cancelled by listeners after this loop had kept them.
      let k = 0;
      for (let i = 0; i < running.length; i++) {
        if (running[i].state === SeqState.Running) running[k++] = running[i];
      }
      running.length = k;
      this.cancelledInFlight = 0;
    }
  }

  load(): ReplicaLoad {
    const sch = this.scheduler;
    return {
      running: sch.numRunning,
      waiting: sch.numWaiting,
      kvUsedBlocks: this.kv.pool.usedBlocks,
      kvTotalBlocks: this.kv.pool.totalBlocks,
      pendingPrefillTokens: sch.pendingPrefill,
    };
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
