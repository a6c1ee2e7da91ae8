/**
 * The simulated fleet: N identical engine replicas on the virtual clock, plus the control
 * plane's own view of them (requests in flight per replica). Routing sees snapshots of this.
 */
import { createStats, type EngineStats } from '../engine/engine-stats.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { Timers } from '../core/ports/timers.ts';
import type { ReplicaSnapshot } from '../core/fleet/replica-snapshot.ts';
import type { EngineConfig, EngineListener } from '../engine/engine-types.ts';
import type { TimingProfile } from '../engine/timing/profile.ts';
import { ReplicaDriver } from '../engine/replica-driver.ts';
import type { RequestTracker } from './request-tracker.ts';

export interface Outstanding {
  readonly prefillTokens: number;
  readonly seqs: number;
  readonly outputTokens: number;
  readonly contextTokens: number;
}

interface MutableSnapshot {
  index: number;
  inFlight: number;
  running: number;
  waiting: number;
  kvUsage: number;
  loras?: readonly string[];
}

export class Fleet {
  private readonly replicas: ReplicaDriver<RequestTracker>[] = [];
  private readonly views: MutableSnapshot[] = [];
  private readonly clock: Clock;
  readonly kvCapacityTokens: number;
  /** ∫ (requests in the fleet) dt, in request·ms: the L of Little's law, measured on its own. */
  private inSystemArea = 0;
  private inSystem = 0;
  private lastChangeMs = 0;

  constructor(
    n: number,
    config: EngineConfig,
    profile: TimingProfile,
    listener: EngineListener<RequestTracker>,
    clock: Clock & Timers,
    /** Each replica's prefix-cache events (vLLM's KV events), when a router wants them. */
    onKvEvent?: (replica: number, kind: 'stored' | 'removed', hash: string) => void,
  ) {
    this.clock = clock;
    for (let i = 0; i < n; i++) {
      // The shared listener, with this replica's KV events told apart.
      const own: EngineListener<RequestTracker> =
        onKvEvent === undefined
          ? listener
          : Object.assign(Object.create(listener) as EngineListener<RequestTracker>, {
              onKvEvent: (kind: 'stored' | 'removed', hash: string) => onKvEvent(i, kind, hash),
            });
      this.replicas.push(
        new ReplicaDriver<RequestTracker>({ config, profile, listener: own, clock, timers: clock }),
      );
      this.views.push({ index: i, inFlight: 0, running: 0, waiting: 0, kvUsage: 0 });
    }
    const load = this.replicas[0].load();
    this.kvCapacityTokens = n * load.kvTotalBlocks * config.blockSize;
  }

  /** Fresh snapshots of every replica (all are ready until autoscaling exists). */
  snapshots(): readonly ReplicaSnapshot[] {
    for (let i = 0; i < this.replicas.length; i++) {
      const load = this.replicas[i].load();
      const v = this.views[i];
      v.running = load.running;
      v.waiting = load.waiting;
      v.kvUsage = load.kvTotalBlocks > 0 ? load.kvUsedBlocks / load.kvTotalBlocks : 1;
      if (load.loras !== undefined) v.loras = load.loras;
    }
    return this.views;
  }

  dispatch(attempt: RequestTracker): void {
    this.changeInSystem(1);
    this.views[attempt.replica].inFlight++;
    this.replicas[attempt.replica].add(attempt);
  }

  /** The attempt left the replica (finished or failed). */
  release(replica: number): void {
    this.changeInSystem(-1);
    this.views[replica].inFlight--;
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
    this.replicas[attempt.replica].cancel(attempt.id);
    this.release(attempt.replica);
  }

  /** Every replica's counters, summed. */
  stats(): EngineStats {
    const sum = createStats();
    for (const r of this.replicas) {
      const s = r.stats();
      for (const k of Object.keys(sum) as (keyof EngineStats)[]) sum[k] += s[k];
    }
    return sum;
  }

  /**
   * What each replica holds still to do (engine truth, for reports): prompt tokens not yet
   * computed, and of its live sequences their count, the output they have still to generate and
   * their context now.
   */
  outstanding(): Outstanding[] {
    return this.replicas.map((r) => {
      let seqs = 0;
      let outputTokens = 0;
      let contextTokens = 0;
      for (const s of r.core.sequences()) {
        seqs++;
        outputTokens += s.output - s.emitted;
        contextTokens += s.input + s.emitted;
      }
      return { prefillTokens: r.load().pendingPrefillTokens, seqs, outputTokens, contextTokens };
    });
  }

  /** KV blocks held by sequences (cached, unreferenced prefix blocks excepted): 0 once all requests end. */
  kvUsedBlocks(): number {
    let used = 0;
    for (const r of this.replicas) used += r.load().kvUsedBlocks;
    return used;
  }
}
