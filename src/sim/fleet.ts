/**
 * The simulated fleet: identical engine replicas on the virtual clock, plus the control plane's
 * own view of them (requests in flight per replica). Routing sees snapshots of the ready ones.
 * Under autoscaling a replica group is started (`start`: ready after its ready time, its stages
 * recorded), or drained (`drain`: no new work, removed — its GPUs released — once its last
 * request has ended); a group still starting is cancelled at once. GPUs are held from a group's
 * request to its removal. Disaggregated (`prefill`), a request placed on a replica is prefilled in
 * the prefill pool first and reaches its replica with its prompt's KV (`prefill-pool.ts`).
 */
import { addStats, createStats, type EngineStats } from '../engine/engine-stats.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { Ms } from '../core/request/units.ts';
import type { Timers } from '../core/ports/timers.ts';
import type { ReplicaSnapshot } from '../core/fleet/replica-snapshot.ts';
import type { EngineConfig, EngineListener } from '../engine/engine-types.ts';
import type { TimingProfile } from '../engine/timing/profile.ts';
import type { GroupRecord, GroupState } from '../core/fleet/replica-group.ts';
import { ReplicaDriver } from '../engine/replica-driver.ts';
import type { RequestTracker } from './request-tracker.ts';
import type { SimSequence } from './choice-stream.ts';
import { GroupBook, type GroupLifecycle } from './group-book.ts';
import { PrefillPool, type PrefillSink } from './prefill-pool.ts';
import { kvTransferMs, type KvLink } from '../engine/kv-transfer.ts';
import type { FleetSpec } from '../core/fleet/fleet-spec.ts';
import type { LiveWork } from '../engine/live-totals.ts';

export interface Outstanding extends LiveWork {
  readonly prefillTokens: number;
}

interface MutableSnapshot {
  index: number;
  inFlight: number;
  running: number;
  waiting: number;
  kvUsage: number;
  loras?: readonly string[];
  servable?: readonly string[];
  prefillBacklogSteps?: number;
}

/** Disaggregated serving: a prefill pool in front of the replicas, and the link between. */
export interface PrefillSpec {
  /** Prefill groups at the start: the floor under autoscaling. */
  readonly replicas: number;
  /** Under autoscaling, the pool's ceiling (default: `replicas`, a fixed pool). */
  readonly maxReplicas?: number;
  readonly link: KvLink;
  /** How the pool's groups start and go (autoscaling). */
  readonly lifecycle?: GroupLifecycle;
}

export class Fleet {
  private readonly replicas: ReplicaDriver<SimSequence>[] = [];
  private readonly views: MutableSnapshot[] = [];
  /** Each group's life: requested, ready, drained, removed. */
  private readonly book: GroupBook;
  /** The ready groups' views, in index order; rebuilt when a group changes state. */
  private ready: MutableSnapshot[] = [];
  private readonly clock: Clock & Timers;
  private readonly config: EngineConfig;
  private readonly profile: TimingProfile;
  private readonly listener: EngineListener<SimSequence>;
  private readonly onKvEvent?: (replica: number, kind: 'stored' | 'removed', hash: string) => void;
  /** Disaggregated: where prompts are prefilled before their decode replica takes them. */
  readonly prefill: PrefillPool | undefined;
  readonly kvCapacityTokens: number;
  /** KV capacity of one replica, in tokens. */
  readonly replicaKvTokens: number;
  /** Groups ready from the start. */
  private readonly initialReplicas: number;
  private readonly servableOf: ((replica: number) => readonly string[]) | undefined;
  /** ∫ (requests in the fleet) dt, in request·ms: the L of Little's law, measured on its own. */
  private inSystemArea = 0;
  private inSystem = 0;
  private lastChangeMs = 0;

  constructor(
    n: number,
    config: EngineConfig,
    profile: TimingProfile,
    listener: EngineListener<SimSequence>,
    clock: Clock & Timers,
    /** Each replica's prefix-cache events (vLLM's KV events), when a router wants them. */
    onKvEvent?: (replica: number, kind: 'stored' | 'removed', hash: string) => void,
    lifecycle?: GroupLifecycle,
    prefill?: PrefillSpec,
    /** The adapters each replica serves, when not every one serves every adapter. */
    servableOf?: (replica: number) => readonly string[],
  ) {
    this.servableOf = servableOf;
    this.clock = clock;
    this.config = config;
    this.profile = profile;
    this.listener = listener;
    this.onKvEvent = onKvEvent;
    this.book = new GroupBook(clock, lifecycle, () => this.rebuildReady());
    this.prefill =
      prefill === undefined
        ? undefined
        : new PrefillPool(
            prefill.replicas,
            config,
            profile,
            prefill.link,
            clock,
            // The request's own listener, with its KV's arrival at its replica added.
            Object.assign(Object.create(listener) as PrefillSink, {
              kvArrived: (t: RequestTracker) => this.queue(t),
              decodeCached: (t: RequestTracker) =>
                this.replicas[t.replica].core.cachedPromptTokens(t),
            }),
            prefill.lifecycle,
          );
    this.initialReplicas = n;
    for (let i = 0; i < n; i++) this.book.addReady(this.addReplica());
    this.rebuildReady();
    const load = this.replicas[0].load();
    this.replicaKvTokens = load.kvTotalBlocks * config.blockSize;
    this.kvCapacityTokens = n * this.replicaKvTokens;
  }

  /** A new engine replica and its view; returns its index. */
  private addReplica(): number {
    const i = this.replicas.length;
    const onKvEvent = this.onKvEvent;
    // The shared listener, with this replica's KV events told apart.
    const own: EngineListener<SimSequence> =
      onKvEvent === undefined
        ? this.listener
        : Object.assign(Object.create(this.listener) as EngineListener<SimSequence>, {
            onKvEvent: (kind: 'stored' | 'removed', hash: string) => onKvEvent(i, kind, hash),
          });
    const { config, profile, clock } = this;
    this.replicas.push(
      new ReplicaDriver<SimSequence>({ config, profile, listener: own, clock, timers: clock }),
    );
    const servable = this.servableOf?.(i);
    this.views.push({
      index: i,
      inFlight: 0,
      running: 0,
      waiting: 0,
      kvUsage: 0,
      ...(servable === undefined ? {} : { servable }),
    });
    return i;
  }

  private rebuildReady(): void {
    this.ready = this.views.filter((v) => this.book.isReady(v.index));
  }

  /** Each group's life: requested, ready, drained, removed. */
  get groups(): readonly GroupRecord[] {
    return this.book.groups;
  }

  /** Groups by state now. */
  count(state: GroupState): number {
    return this.book.count(state);
  }

  /** Requests a new group: it serves once its stages are done (its ready time). */
  start(): number {
    const index = this.addReplica();
    this.book.request(index);
    return index;
  }

  /**
   * Scale-in: a starting group is cancelled at once; a ready one takes no new request and is
   * removed when its last one has ended.
   */
  drain(index: number): void {
    this.book.drain(index, this.views[index].inFlight === 0);
  }

  /**
   * Group `index` fails now: it is gone at once (no drain), its GPUs released, and the requests
   * it held are returned (cancelled in its engine, still counted in flight: the caller ends or
   * moves each one).
   */
  fail(index: number): RequestTracker[] {
    const held = new Set<RequestTracker>();
    this.book.fail(index, () => {
      for (const s of this.replicas[index].core.sequences()) held.add(s.req.request);
      for (const t of held) this.drop(t);
      // Those still prefilling for it, or with their KV on the way, are its requests too.
      if (this.prefill !== undefined) for (const t of this.prefill.takeBoundFor(index)) held.add(t);
    });
    return [...held];
  }

  /** Groups failed so far. */
  get failures(): number {
    return this.book.failures;
  }

  /**
   * A prefix-cache cold reset (a rolling restart, a weight update): every ready replica drops
   * the cached prefixes no running request holds, and the router hears of each removal. Returns
   * the blocks dropped.
   */
  flushPrefixCaches(): number {
    let dropped = 0;
    for (const v of this.ready) {
      const cache = this.replicas[v.index].core.kv.cache;
      if (cache === null) continue;
      const before = cache.stats.evictedBlocks;
      cache.reclaim(Number.MAX_SAFE_INTEGER);
      dropped += cache.stats.evictedBlocks - before;
    }
    return dropped;
  }

  /** The ready group holding the most requests (where a failure costs the most); −1 if none. */
  busiestReady(): number {
    let best = -1;
    for (const v of this.ready)
      if (best < 0 || v.inFlight > this.views[best].inFlight) best = v.index;
    return best;
  }

  /** GPU-held and ready replica time up to `untilMs` (ms of replica time). */
  replicaTime(untilMs: number): { heldMs: number; readyMs: number } {
    return this.book.time(untilMs);
  }

  /**
   * The report's account of the fleet's GPU time up to `untilMs` (ms of replica time): ready and
   * held — the starting fleet for the whole run when it is not `scaled` and lost no group, else
   * each group from its request to its removal — with `outsideMs` of GPUs held outside the pool
   * (a canary's) and the prefill pool's groups among the held; and the prefill pool's own account.
   */
  gpuTime(untilMs: Ms, scaled: boolean, outsideMs: Ms) {
    const pool = this.prefill;
    const prefill = pool?.time(untilMs);
    const poolStats = pool?.stats();
    const heldElsewhereMs = outsideMs + (prefill?.heldMs ?? 0);
    const whole = this.initialReplicas * untilMs;
    const own = this.replicaTime(untilMs);
    // A fixed fleet that lost a group ran short of it from then on.
    const fixed = !scaled && this.book.failures === 0;
    return {
      ...(fixed
        ? {
            readyReplicaMs: whole,
            ...(heldElsewhereMs > 0 ? { heldReplicaMs: whole + heldElsewhereMs } : {}),
          }
        : { readyReplicaMs: own.readyMs, heldReplicaMs: own.heldMs + heldElsewhereMs }),
      ...(pool === undefined || prefill === undefined || poolStats === undefined
        ? {}
        : {
            prefill: {
              replicas: pool.initialGroups,
              readyMs: prefill.readyMs,
              ...pool.transfers,
              promptTokens: poolStats.promptTokens,
              prefixHitTokens: poolStats.prefixHitTokens,
            },
          }),
    };
  }

  /** Each replica's engine load now (ready or not), for the autoscaler's signals. */
  loads(): ReturnType<ReplicaDriver<SimSequence>['load']>[] {
    return this.replicas.map((r) => r.load());
  }

  /** Requests this control plane has in flight on replica `index`. */
  inFlight(index: number): number {
    return this.views[index].inFlight;
  }

  /** Engine busy time of every replica so far (ms). */
  busyMs(): number[] {
    return this.replicas.map((r) => r.stats().busyMs);
  }

  /** Fresh snapshots of the ready replicas, in index order. */
  snapshots(): readonly ReplicaSnapshot[] {
    const backlog = this.prefill?.backlogSteps();
    for (const v of this.ready) {
      if (backlog !== undefined) v.prefillBacklogSteps = backlog;
      const load = this.replicas[v.index].load();
      v.running = load.running;
      v.waiting = load.waiting;
      v.kvUsage = load.kvTotalBlocks > 0 ? load.kvUsedBlocks / load.kvTotalBlocks : 1;
      if (load.loras !== undefined) v.loras = load.loras;
    }
    return this.ready;
  }

  dispatch(attempt: RequestTracker): void {
    this.changeInSystem(1);
    this.views[attempt.replica].inFlight++;
    if (this.prefill !== undefined) this.prefill.submit(attempt);
    else this.queue(attempt);
  }

  /**
   * Queues the attempt's streams in its replica's engine, each choice's beside the first. One the
   * engine fails at once has ended the attempt (its onFail): those queued before it go with it.
   */
  private queue(t: RequestTracker): void {
    const replica = this.replicas[t.replica];
    if (!replica.add(t)) return;
    for (const c of t.choices) {
      c.kvTransferredTokens = t.kvTransferredTokens;
      if (!replica.add(c)) return this.drop(t);
    }
  }

  /** Drops every stream of the attempt its replica's engine holds, freeing their memory. */
  private drop(t: RequestTracker): void {
    const replica = this.replicas[t.replica];
    replica.cancel(t.id);
    for (const c of t.choices) replica.cancel(c.id);
  }

  /** The attempt left the replica (finished or failed). */
  release(replica: number): void {
    this.changeInSystem(-1);
    this.views[replica].inFlight--;
    this.book.removeIfDrained(replica, this.views[replica].inFlight === 0);
  }

  /** Time-average number of requests in the fleet over [0, untilMs]. */
  meanInSystem(untilMs: number): number {
    const area = this.inSystemArea + this.inSystem * (untilMs - this.lastChangeMs);
    return untilMs > 0 ? area / untilMs : 0;
  }

  private changeInSystem(delta: number): void {
    const now = this.clock.now();
    this.inSystemArea += this.inSystem * (now - this.lastChangeMs);
    this.lastChangeMs = now;
    this.inSystem += delta;
  }

  /** The client abandoned it: the replica drops it and frees its memory. */
  cancel(attempt: RequestTracker): void {
    if (this.prefill?.cancel(attempt) !== true) this.drop(attempt);
    this.release(attempt.replica);
  }

  /** Every replica's counters, summed (the prefill pool's with them). */
  stats(): EngineStats {
    const sum = createStats();
    for (const r of this.replicas) addStats(sum, r.stats());
    if (this.prefill !== undefined) addStats(sum, this.prefill.stats());
    return sum;
  }

  /**
   * What each replica holds still to do (engine truth, for reports): prompt tokens not yet
   * computed, and of its live sequences their count, the output they have still to generate and
   * their context now.
   */
  outstanding(): Outstanding[] {
    return this.replicas.map((r) => ({
      prefillTokens: r.load().pendingPrefillTokens,
      ...r.core.liveWork(),
    }));
  }

  /** KV blocks held by sequences (cached, unreferenced prefix blocks excepted): 0 once all requests end. */
  kvUsedBlocks(): number {
    let used = 0;
    for (const r of this.replicas) used += r.load().kvUsedBlocks;
    return used + (this.prefill?.kvUsedBlocks() ?? 0);
  }
}

/**
 * Disaggregated serving, as the fleet's facts: prompts computed elsewhere, their KV sent over
 * `link`.
 */
export function prefillHandover(
  engine: EngineConfig,
  link: KvLink,
): Pick<FleetSpec, 'prefilledElsewhere' | 'kvTransferMs'> {
  return {
    prefilledElsewhere: true,
    kvTransferMs: (tokens) => kvTransferMs(tokens, engine.model, engine.tp, link),
  };
}
