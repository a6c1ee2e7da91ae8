/**
 * The lives of a pool's replica groups on the virtual clock (`core/fleet/replica-group.ts`): a
 * group is requested and serves only after its ready time, its stages recorded; scale-in drains
 * it — a group still starting is cancelled at once, a ready one takes no new work and is removed,
 * its GPUs released, once the pool says it is idle. GPUs are held from request to removal. Both
 * the fleet's replicas and a disaggregated fleet's prefill pool keep their groups here.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { Timers } from '../core/ports/timers.ts';
import type { Rng } from '../core/ports/rng.ts';
import {
  GROUP_STAGES,
  stageDurations,
  type GroupRecord,
  type GroupState,
  type ReadyTime,
} from '../core/fleet/replica-group.ts';

/** What a pool needs to start groups of its own (autoscaling). */
export interface GroupLifecycle {
  readonly readyTime: ReadyTime;
  /** Draws each group's ready time. */
  readonly rng: Rng;
  /** A group became ready (routing may use it now). */
  onReady(index: number): void;
  /** A group was removed: its caches and sessions are gone. */
  onRemoved(index: number): void;
}

const NO_STAGES = stageDurations({ minMs: 0, maxMs: 0 }, 0);

export class GroupBook {
  /** Each group's life, by replica index. */
  readonly groups: GroupRecord[] = [];
  /** Groups failed so far. */
  failures = 0;
  private readonly clock: Clock & Timers;
  private readonly lifecycle: GroupLifecycle | undefined;
  /** Called when the set of ready groups changes. */
  private readonly changed: () => void;

  constructor(clock: Clock & Timers, lifecycle: GroupLifecycle | undefined, changed: () => void) {
    this.clock = clock;
    this.lifecycle = lifecycle;
    this.changed = changed;
  }

  /** A group there from the start, ready at 0. */
  addReady(index: number): void {
    this.groups.push({
      index,
      state: 'ready',
      requestedMs: 0,
      readyMs: 0,
      drainStartMs: Infinity,
      removedMs: Infinity,
      stages: NO_STAGES,
    });
  }

  /** Requests group `index` now: it serves once its stages are done (its ready time). */
  request(index: number): void {
    const lc = this.lifecycle;
    if (lc === undefined) throw new Error('groups: start without a group lifecycle');
    const now = this.clock.now();
    const stages = stageDurations(lc.readyTime, lc.rng.next());
    let total = 0;
    for (const s of GROUP_STAGES) total += stages[s];
    const g: GroupRecord = {
      index,
      state: 'starting',
      requestedMs: now,
      readyMs: now + total,
      drainStartMs: Infinity,
      removedMs: Infinity,
      stages,
    };
    this.groups.push(g);
    this.clock.at(g.readyMs, () => {
      if (g.state !== 'starting') return;
      g.state = 'ready';
      this.changed();
      lc.onReady(index);
    });
  }

  /**
   * Scale-in: a starting group is cancelled at once; a ready one takes no new work and is removed
   * once `idle` (now, or later through `removeIfDrained`).
   */
  drain(index: number, idle: boolean): void {
    const g = this.groups[index];
    const now = this.clock.now();
    if (g.state === 'starting') {
      g.state = 'removed';
      g.readyMs = Infinity;
      g.removedMs = now;
      return;
    }
    if (g.state !== 'ready') return;
    g.state = 'draining';
    g.drainStartMs = now;
    this.changed();
    this.removeIfDrained(index, idle);
  }

  /** A draining group that is idle is removed: its GPUs released. */
  removeIfDrained(index: number, idle: boolean): void {
    const g = this.groups[index];
    if (g.state !== 'draining' || !idle) return;
    g.state = 'removed';
    g.removedMs = this.clock.now();
    this.lifecycle?.onRemoved(index);
  }

  /**
   * Group `index` fails now: gone at once, no drain; `release` hands back what it held before
   * the removal is told. False if it was already removed.
   */
  fail(index: number, release: () => void): boolean {
    const g = this.groups[index];
    if (g.state === 'removed') return false;
    const now = this.clock.now();
    if (g.state === 'ready' || g.state === 'draining') {
      g.drainStartMs = Math.min(g.drainStartMs, now);
    } else g.readyMs = Infinity;
    g.state = 'removed';
    g.removedMs = now;
    this.failures++;
    this.changed();
    release();
    this.lifecycle?.onRemoved(index);
    return true;
  }

  isReady(index: number): boolean {
    return this.groups[index].state === 'ready';
  }

  /** Groups by state now. */
  count(state: GroupState): number {
    let n = 0;
    for (const g of this.groups) if (g.state === state) n++;
    return n;
  }

  /** GPU-held and ready group time up to `untilMs` (ms of group time). */
  time(untilMs: number): { heldMs: number; readyMs: number } {
    let heldMs = 0;
    let readyMs = 0;
    for (const g of this.groups) {
      const end = Math.min(g.removedMs, untilMs);
      heldMs += Math.max(0, end - g.requestedMs);
      readyMs += Math.max(0, Math.min(g.drainStartMs, end) - g.readyMs);
    }
    return { heldMs, readyMs };
  }
}
