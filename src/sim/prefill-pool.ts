/**
 * The prefill pool of a disaggregated fleet (`--prefill-replicas N`), as vLLM's disaggregated
 * prefill, llm-d's P/D and Dynamo run it: the control plane places a request on a decode
 * replica (which holds its stream and its KV to the end), and a prefill replica computes its
 * prompt first — a request of one output token there — whose KV then crosses the link
 * (`kvTransferMs`) into the decode replica, which computes only the last prompt token and
 * streams from there. The client's first token is the decode replica's: TTFT is the prefill
 * queue, the prefill, the transfer and the decode replica's first step.
 *
 * Placement in the pool: the replica with the fewest prompt tokens still to compute (ties: the
 * lowest index). The prefill replica frees its KV when the prefill ends (vLLM holds it until the
 * decode side has pulled it: milliseconds, not modelled).
 */
import type { Ms } from '../core/request/units.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import { addStats, createStats, type EngineStats } from '../engine/engine-stats.ts';
import type {
  EngineConfig,
  EngineListener,
  EngineRequest,
  FailReason,
  PreemptionKind,
} from '../engine/engine-types.ts';
import { kvBytesPerToken } from '../engine/hardware.ts';
import { kvTransferMs, type KvLink } from '../engine/kv-transfer.ts';
import { ReplicaDriver } from '../engine/replica-driver.ts';
import type { TimingProfile } from '../engine/timing/profile.ts';
import type { RequestTracker } from './request-tracker.ts';

/** What the pool tells the fleet: the request's events, and its KV's arrival. */
export interface PrefillSink {
  onPrefillStart(t: RequestTracker, atMs: Ms): void;
  onPreempt(t: RequestTracker, atMs: Ms, mode: PreemptionKind): void;
  /** Its prefill failed (e.g. its prompt cannot fit): the attempt ends here. */
  onFail(t: RequestTracker, atMs: Ms, reason: FailReason): void;
  /** Its prompt's KV has arrived at its decode replica. */
  kvArrived(t: RequestTracker): void;
}

/** A prompt to prefill: one output token, for the request it belongs to. */
interface PrefillJob extends EngineRequest {
  readonly attempt: RequestTracker;
}

interface InPool {
  readonly job: PrefillJob;
  readonly replica: number;
  transfer: TimerHandle | null;
}

/** Transfers so far, for the report. */
export interface KvTransfers {
  readonly transfers: number;
  readonly bytes: number;
  readonly ms: Ms;
}

export class PrefillPool {
  private readonly replicas: ReplicaDriver<PrefillJob>[] = [];
  /** Requests in the pool, prefilling or in transfer, by id. */
  private readonly inPool = new Map<string, InPool>();
  private readonly config: EngineConfig;
  private readonly link: KvLink;
  private readonly clock: Clock & Timers;
  private readonly sink: PrefillSink;
  private transferred: KvTransfers = { transfers: 0, bytes: 0, ms: 0 };

  constructor(
    n: number,
    config: EngineConfig,
    profile: TimingProfile,
    link: KvLink,
    clock: Clock & Timers,
    sink: PrefillSink,
  ) {
    this.config = config;
    this.link = link;
    this.clock = clock;
    this.sink = sink;
    const listener: EngineListener<PrefillJob> = {
      onPrefillStart: (j, atMs) => sink.onPrefillStart(j.attempt, atMs),
      onFirstToken: () => {},
      onToken: () => {},
      onFinish: (j, atMs) => this.send(j, atMs),
      onPreempt: (j, atMs, mode) => sink.onPreempt(j.attempt, atMs, mode),
      onFail: (j, atMs, reason) => {
        this.inPool.delete(j.id);
        sink.onFail(j.attempt, atMs, reason);
      },
    };
    for (let i = 0; i < n; i++) {
      this.replicas.push(new ReplicaDriver({ config, profile, listener, clock, timers: clock }));
    }
  }

  get size(): number {
    return this.replicas.length;
  }

  /** Prefills `t`'s prompt on the least loaded prefill replica. */
  submit(t: RequestTracker): void {
    let best = 0;
    let bestTokens = Infinity;
    this.replicas.forEach((r, i) => {
      const pending = r.load().pendingPrefillTokens;
      if (pending < bestTokens) [best, bestTokens] = [i, pending];
    });
    const job: PrefillJob = {
      id: t.id,
      inputTokens: t.inputTokens,
      outputTokens: 1,
      prefix: t.prefix,
      priority: t.priority,
      ttftDeadlineMs: t.ttftDeadlineMs,
      adapter: t.adapter,
      attempt: t,
    };
    this.inPool.set(t.id, { job, replica: best, transfer: null });
    this.replicas[best].add(job);
  }

  /** The prompt is computed: its KV crosses the link, then the decode replica takes it. */
  private send(j: PrefillJob, atMs: Ms): void {
    const entry = this.inPool.get(j.id);
    if (entry === undefined) return;
    const { model, tp } = this.config;
    const ms = kvTransferMs(j.inputTokens, model, tp, this.link);
    const t = this.transferred;
    this.transferred = {
      transfers: t.transfers + 1,
      bytes: t.bytes + j.inputTokens * kvBytesPerToken(model),
      ms: t.ms + ms,
    };
    entry.transfer = this.clock.at(atMs + ms, () => {
      this.inPool.delete(j.id);
      j.attempt.kvTransferredTokens = j.inputTokens;
      this.sink.kvArrived(j.attempt);
    });
  }

  /** Drops `t` if it is still in the pool (prefilling or in transfer); false if it is not. */
  cancel(t: RequestTracker): boolean {
    const entry = this.inPool.get(t.id);
    if (entry === undefined || entry.job.attempt !== t) return false;
    this.inPool.delete(t.id);
    if (entry.transfer !== null) entry.transfer.cancel();
    else this.replicas[entry.replica].cancel(t.id);
    return true;
  }

  /** Drops and returns the requests in the pool bound for decode replica `index` (it failed). */
  takeBoundFor(index: number): RequestTracker[] {
    const bound = [...this.inPool.values()]
      .map((e) => e.job.attempt)
      .filter((t) => t.replica === index);
    for (const t of bound) this.cancel(t);
    return bound;
  }

  /** Prompt tokens still to compute, in steps of the whole pool (`prefill-fit` reads it). */
  backlogSteps(): number {
    let pending = 0;
    for (const r of this.replicas) pending += r.load().pendingPrefillTokens;
    return pending / (this.replicas.length * this.config.maxBatchedTokens);
  }

  get transfers(): KvTransfers {
    return this.transferred;
  }

  /** The pool's engine counters, summed. */
  stats(): EngineStats {
    const sum = createStats();
    for (const r of this.replicas) addStats(sum, r.stats());
    return sum;
  }

  /** KV blocks its replicas' sequences hold (0 once every prefill has ended). */
  kvUsedBlocks(): number {
    let used = 0;
    for (const r of this.replicas) used += r.load().kvUsedBlocks;
    return used;
  }
}
