/**
 * A replica's sequences paused for tool calls (agentic requests): a sequence that reaches a
 * tool call stops decoding until the call returns, and its KV is kept (it stays in the batch,
 * holding its blocks and its seat, skipped), swapped to host or dropped (it leaves the batch) —
 * as `toolKv` says, or under `auto` by the tool waits this replica has seen and how short its KV
 * is. The driver times each call (`take`) and resumes the sequence when it returns: the tool's
 * result joins its context, to be prefilled.
 */
import type { Ms } from '../core/request/units.ts';
import type { EngineConfig, EngineListener, EngineRequest } from './engine-types.ts';
import type { EngineStats } from './engine-stats.ts';
import type { KvCacheManager } from './kv-cache-manager.ts';
import type { Scheduler } from './scheduler.ts';
import { resumeKept } from './holds.ts';
import { NO_PAUSE, type Seq, SeqState, prefillRemaining } from './sequence.ts';
import type { TokenRuns } from './token-runs.ts';

/** Under `toolKv: auto`, the expected tool wait up to which KV is kept. */
const DEFAULT_TOOL_KEEP_MS = 2_000;
/** KV is short when fewer than this share of its blocks are free: a paused sequence gives way. */
const KV_SHORT_RATIO = 0.1;
/** Weight of the newest tool wait in the replica's expectation (an EWMA over ~10). */
const TOOL_WAIT_EWMA = 0.1;
const NO_PAUSES: readonly { id: string; atMs: Ms }[] = Object.freeze([]);

export class ToolPauses<R extends EngineRequest> {
  private readonly config: EngineConfig;
  private readonly kv: KvCacheManager;
  private readonly scheduler: Scheduler<R>;
  private readonly counters: EngineStats;
  private readonly listener: EngineListener<R>;
  private readonly runs: TokenRuns<R> | null;
  /** Pauses not yet handed to the driver. */
  private pauses: { id: string; atMs: Ms }[] = [];
  /** Tool waits seen on this replica (EWMA), which `auto` weighs: until one, keep. */
  private waitMs = 0;
  private waits = 0;

  constructor(
    config: EngineConfig,
    kv: KvCacheManager,
    scheduler: Scheduler<R>,
    counters: EngineStats,
    listener: EngineListener<R>,
    runs: TokenRuns<R> | null,
  ) {
    this.config = config;
    this.kv = kv;
    this.scheduler = scheduler;
    this.counters = counters;
    this.listener = listener;
    this.runs = runs;
  }

  /**
   * `s` reached a tool call at the end of a step: it pauses until the call returns. Returns true
   * when it left the batch (its KV swapped or dropped).
   */
  pause(s: Seq<R>, nowMs: Ms): boolean {
    const calls = s.req.toolCalls as NonNullable<R['toolCalls']>;
    const call = calls[s.toolNext++];
    s.pauseAt = calls[s.toolNext]?.afterTokens ?? NO_PAUSE;
    s.paused = true;
    s.pausedAtMs = nowMs;
    this.pauses.push({ id: s.req.id, atMs: nowMs + call.waitMs });
    this.runs?.end(s);
    const kv = this.kvFor(s);
    this.listener.onPause?.(s.req, nowMs, kv);
    if (kv === 'keep') {
      this.counters.toolPausesKeep++;
      this.scheduler.markIdle();
      return false;
    }
    // Called while the step's end compacts the batch: it is left out there, not spliced here.
    const done = this.scheduler.release(s, kv === 'swap', false);
    if (done === 'swap') this.counters.toolPausesSwap++;
    else this.counters.toolPausesDrop++;
    return true;
  }

  /** Pauses begun since the last call, each with when its tool call returns: the driver's timers. */
  take(): readonly { id: string; atMs: Ms }[] {
    const out = this.pauses;
    // Asked after every step: a step without a pause allocates nothing.
    if (out.length === 0) return NO_PAUSES;
    this.pauses = [];
    return out;
  }

  /**
   * The tool call of paused `s` returned at `nowMs`: its result joins the context to be
   * prefilled, and the sequence goes on — in the batch if its KV was kept, else from the front
   * of the waiting queue.
   */
  resume(s: Seq<R>, nowMs: Ms): void {
    const call = (s.req.toolCalls as NonNullable<R['toolCalls']>)[s.toolNext - 1];
    const waited = nowMs - s.pausedAtMs;
    this.counters.toolPausedMs += waited;
    this.counters.toolResumes++;
    this.waitMs =
      this.waits++ === 0 ? waited : this.waitMs + TOOL_WAIT_EWMA * (waited - this.waitMs);
    s.paused = false;
    // The context to compute now: its last token (emitted, not yet in KV) and the tool's result
    // — and, dropped, everything before them again.
    const before = prefillRemaining(s);
    s.toolTokens += call.resultTokens;
    s.target = s.input + s.toolTokens + s.emitted;
    s.prefilling = true;
    this.scheduler.pendingPrefill += prefillRemaining(s) - before;
    if (s.state === SeqState.Running) resumeKept(this.scheduler, s);
    else this.scheduler.requeue(s);
    this.listener.onResume?.(s.req, nowMs);
  }

  /** What a pausing sequence does with its KV (`ToolKvMode`). */
  private kvFor(s: Seq<R>): 'keep' | 'swap' | 'drop' {
    const mode = this.config.toolKv ?? 'auto';
    if (mode !== 'auto') return mode;
    const keepMs = this.config.toolKeepMs ?? DEFAULT_TOOL_KEEP_MS;
    const short = this.kv.pool.freeBlocks < KV_SHORT_RATIO * this.kv.pool.totalBlocks;
    if (this.waitMs <= keepMs && !short) return 'keep';
    return this.scheduler.costs.swapIsCheaper(s) ? 'swap' : 'drop';
  }
}
