/**
 * The prefill pool of a disaggregated fleet (`--prefill-replicas N`), as vLLM's disaggregated
 * prefill, llm-d's P/D and Dynamo run it: the control plane places a request on a decode
 * replica (which holds its stream and its KV to the end), and a prefill replica computes its
 * prompt first — a request of one output token there — whose KV then crosses the link
 * (`kvTransferMs`) into the decode replica, which computes only the last prompt token and
 * streams from there. Only what the decode replica's own prefix cache lacks crosses. The client's first token is the decode replica's: TTFT is the prefill
 * queue, the prefill, the transfer and the decode replica's first step.
 *
 * Placement in the pool: the ready replica that would compute the prompt soonest — the fewest
 * prompt tokens still to compute there, this prompt's included less what that replica's prefix
 * cache holds of it (llm-d's P/D scores prefill pods by prefix too) — ties to the lowest index.
 * Without a shared prefix that is the least loaded replica. The prefill replica frees its KV when the prefill ends (vLLM holds it until
 * the decode side has pulled it: milliseconds, not modelled). Under autoscaling the pool's groups
 * start and drain on their own signals (`autoscaling.ts`), their lives kept as the fleet's are
 * (`group-book.ts`); a draining prefill group is removed once its last prompt is computed.
 */
import type { Ms } from '../core/request/units.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import { addStats, createStats, type EngineStats } from '../engine/engine-stats.ts';
import type {
  EngineConfig,
  EngineListener,
  EngineRequest,
  ReplicaLoad,
} from '../engine/engine-types.ts';
import { kvBytesPerToken } from '../engine/hardware.ts';
import { kvTransferMs, type KvLink } from '../engine/kv-transfer.ts';
import { ReplicaDriver } from '../engine/replica-driver.ts';
import type { TimingProfile } from '../engine/timing/profile.ts';
import type { RequestTracker } from './request-tracker.ts';
import { GroupBook, type GroupLifecycle } from './group-book.ts';
import type { GroupRecord, GroupState } from '../core/fleet/replica-group.ts';

/**
 * What the pool tells the fleet: the request's prefill start, preemptions and failure (its
 * attempt ends there), as its own engine events, and its KV's arrival.
 */
export interface PrefillSink extends Pick<
  EngineListener<RequestTracker>,
  'onPrefillStart' | 'onPreempt' | 'onFail'
> {
  /** Its prompt's KV has arrived at its decode replica. */
  kvArrived(t: RequestTracker): void;
  /** Prompt tokens of `t` its decode replica's prefix cache holds now: they need not cross. */
  decodeCached(t: RequestTracker): number;
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
  transfers: number;
  bytes: number;
  ms: Ms;
}

export class PrefillPool {
  private readonly replicas: ReplicaDriver<PrefillJob>[] = [];
  /** Prompts each replica is prefilling (placed, not yet sent on or dropped). */
  private readonly prefilling: number[] = [];
  private readonly book: GroupBook;
  private readonly profile: TimingProfile;
  private readonly listener: EngineListener<PrefillJob>;
  /** Requests in the pool, prefilling or in transfer, by id. */
  private readonly inPool = new Map<string, InPool>();
  private readonly config: EngineConfig;
  private readonly link: KvLink;
  private readonly clock: Clock & Timers;
  private readonly sink: PrefillSink;
  private readonly sent: KvTransfers = { transfers: 0, bytes: 0, ms: 0 };
  /** Groups ready from the start: the floor under autoscaling. */
  readonly initialGroups: number;

  constructor(
    n: number,
    config: EngineConfig,
    profile: TimingProfile,
    link: KvLink,
    clock: Clock & Timers,
    sink: PrefillSink,
    lifecycle?: GroupLifecycle,
  ) {
    this.config = config;
    this.profile = profile;
    this.link = link;
    this.clock = clock;
    this.sink = sink;
    this.book = new GroupBook(clock, lifecycle, () => {});
    this.listener = {
      onPrefillStart: (j, atMs) => sink.onPrefillStart(j.attempt, atMs),
      onFirstToken: () => {},
      onToken: () => {},
      onFinish: (j, atMs) => this.send(j, atMs),
      onPreempt: (j, atMs, mode) => sink.onPreempt(j.attempt, atMs, mode),
      onFail: (j, atMs, reason) => {
        const entry = this.inPool.get(j.id);
        this.inPool.delete(j.id);
        if (entry !== undefined) this.left(entry.replica);
        sink.onFail(j.attempt, atMs, reason);
      },
    };
    this.initialGroups = n;
    for (let i = 0; i < n; i++) this.book.addReady(this.addReplica());
  }

  private addReplica(): number {
    const { config, profile, listener, clock } = this;
    this.replicas.push(new ReplicaDriver({ config, profile, listener, clock, timers: clock }));
    this.prefilling.push(0);
    return this.replicas.length - 1;
  }

  /** A prompt left replica `i` (sent on, failed or dropped): a draining group may go. */
  private left(i: number): void {
    this.prefilling[i]--;
    this.book.removeIfDrained(i, this.prefilling[i] === 0);
  }

  /** Requests a new prefill group: it serves once ready. */
  start(): number {
    const index = this.addReplica();
    this.book.request(index);
    return index;
  }

  /** Scale-in: no new prompt goes to group `index`; it is removed once its prompts are done. */
  drain(index: number): void {
    this.book.drain(index, this.prefilling[index] === 0);
  }

  get groups(): readonly GroupRecord[] {
    return this.book.groups;
  }

  count(state: GroupState): number {
    return this.book.count(state);
  }

  /** Prompts group `index` is prefilling. */
  inFlight(index: number): number {
    return this.prefilling[index];
  }

  loads(): ReplicaLoad[] {
    return this.replicas.map((r) => r.load());
  }

  busyMs(): number[] {
    return this.replicas.map((r) => r.stats().busyMs);
  }

  /** GPU-held and ready group time up to `untilMs`. */
  time(untilMs: Ms): { heldMs: number; readyMs: number } {
    return this.book.time(untilMs);
  }

  /** Prefills `t`'s prompt on the ready prefill replica that would compute it soonest. */
  submit(t: RequestTracker): void {
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
    let best = -1;
    let bestTokens = Infinity;
    this.replicas.forEach((r, i) => {
      if (!this.book.isReady(i)) return;
      const core = r.core;
      const tokens = core.scheduler.pendingPrefill + job.inputTokens - core.cachedPromptTokens(job);
      if (tokens < bestTokens) [best, bestTokens] = [i, tokens];
    });
    // Scale-in keeps a group ready (it cancels starting groups first, never below one).
    if (best < 0) throw new Error('prefill pool: no ready group to place a prompt on');
    this.inPool.set(t.id, { job, replica: best, transfer: null });
    this.prefilling[best]++;
    this.replicas[best].add(job);
  }

  /** The prompt is computed: its KV crosses the link, then the decode replica takes it. */
  private send(j: PrefillJob, atMs: Ms): void {
    const entry = this.inPool.get(j.id);
    if (entry === undefined) return;
    const { model, tp } = this.config;
    this.left(entry.replica);
    // The decode side pulls only the blocks its own prefix cache lacks (vLLM's KV connectors
    // count its local hits first); it then takes the whole prompt as arrived.
    const moved = Math.max(0, j.inputTokens - this.sink.decodeCached(j.attempt));
    const ms = kvTransferMs(moved, model, tp, this.link);
    this.sent.transfers++;
    this.sent.bytes += moved * kvBytesPerToken(model);
    this.sent.ms += ms;
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
    else {
      this.replicas[entry.replica].cancel(t.id);
      this.left(entry.replica);
    }
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
    let ready = 0;
    // Read on every placement: the engines' counter, no load report built.
    this.replicas.forEach((r, i) => {
      pending += r.core.scheduler.pendingPrefill;
      if (this.book.isReady(i)) ready++;
    });
    return pending / (Math.max(1, ready) * this.config.maxBatchedTokens);
  }

  get transfers(): Readonly<KvTransfers> {
    return this.sent;
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
