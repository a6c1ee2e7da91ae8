/**
 * The autoscaling loop of a simulated fleet: every tick it measures the fleet (arrivals and
 * good completions since the last tick, the queues, KV, GPU busy time), asks the autoscaler how
 * many groups it wants, and acts — starting groups, which serve after their ready time, or
 * scaling in: a starting group is cancelled first, then a ready one drained (the one whose loss
 * costs the least prefix locality, then the least loaded). Each tick is sampled for the
 * report's timeline. It stops ticking once the workload is done.
 */
import { AUTOSCALERS } from '../core/autoscale/controllers.ts';
import { ScaleAdvisor, type FleetSignals } from '../core/autoscale/advisor.ts';
import type { GroupCapacity } from '../core/autoscale/scale-window.ts';
import { GROUP_STAGES, type GroupStage, type ReadyTime } from '../core/fleet/replica-group.ts';
import type { Ms } from '../core/request/units.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { Timers } from '../core/ports/timers.ts';
import type { GroupRecord, GroupState } from '../core/fleet/replica-group.ts';
import type { ReplicaLoad } from '../engine/engine-types.ts';
import type { CapacityEnvelope } from '../core/autoscale/capacity-envelope.ts';

export interface AutoscaleOptions {
  readonly type: string;
  readonly minReplicas: number;
  readonly maxReplicas: number;
  readonly readyTime: ReadyTime;
  readonly tickMs: Ms;
  readonly headroom: number;
  readonly scaleInWindowMs: Ms;
  /** A measured capacity envelope, in place of the model's rate (`--capacity-envelope`). */
  readonly envelope?: CapacityEnvelope;
  /** Operator freezes (`--scale-freeze`): ms windows in which no scaling decision is taken. */
  readonly freezes?: readonly { readonly fromMs: Ms; readonly toMs: Ms }[];
  /** Canaries (`--canary`): ms windows in which one group's GPUs are held outside the pool. */
  readonly canaries?: readonly { readonly fromMs: Ms; readonly toMs: Ms }[];
}

/**
 * A pool of replica groups the loop scales: the fleet's replicas, or a disaggregated fleet's
 * prefill pool, each on its own signals.
 */
export interface ScaledPool {
  readonly groups: readonly GroupRecord[];
  count(state: GroupState): number;
  /** Requests a group; it serves once ready. */
  start(): number;
  drain(index: number): void;
  /** Each group's engine load and busy time so far, by index. */
  loads(): readonly ReplicaLoad[];
  busyMs(): number[];
  /** Requests the control plane has on group `index`. */
  inFlight(index: number): number;
}

/** What the loop reads of the simulation besides the pool. */
export interface AutoscaleHost {
  /** Requests waiting at the control plane now. */
  queued(): number;
  /** Prefix blocks the router believes replica `index` holds (its locality). */
  cachedBlocks(index: number): number;
  /** Whether every request has arrived and ended: nothing more to scale for. */
  done(): boolean;
  /** One group's capacity at SLO for requests of these mean sizes, as the model predicts. */
  capacity(inputTokens: number, outputTokens: number): GroupCapacity;
}

export interface TimelineSample {
  readonly t_s: number;
  readonly desired: number;
  readonly starting: number;
  readonly ready: number;
  readonly draining: number;
  readonly queued: number;
  readonly arrival_rps: number;
  readonly good_rps: number;
  readonly reason: string;
}

export class AutoscaleLoop {
  readonly options: AutoscaleOptions;
  readonly timeline: TimelineSample[] = [];
  /** The autoscaler, and what it counts between ticks. */
  readonly advisor: ScaleAdvisor;
  scaleEvents = 0;
  private lastBusy: number[] = [];
  private readonly fleet: ScaledPool;
  private readonly host: AutoscaleHost;
  private readonly clock: Clock & Timers;

  constructor(
    options: AutoscaleOptions,
    fleet: ScaledPool,
    host: AutoscaleHost,
    clock: Clock & Timers,
  ) {
    this.options = options;
    this.fleet = fleet;
    this.host = host;
    this.clock = clock;
    this.advisor = new ScaleAdvisor(AUTOSCALERS[options.type], {
      minReplicas: options.minReplicas,
      maxReplicas: options.maxReplicas,
      readyTimeMs: (options.readyTime.minMs + options.readyTime.maxMs) / 2,
      tickMs: options.tickMs,
      headroom: options.headroom,
      scaleInWindowMs: options.scaleInWindowMs,
    });
  }

  start(): void {
    this.lastBusy = this.fleet.busyMs();
    this.clock.at(this.clock.now() + this.options.tickMs, () => this.tick());
  }

  private tick(): void {
    const now = this.clock.now();
    const within = (w: { fromMs: Ms; toMs: Ms }) => now >= w.fromMs && now < w.toMs;
    this.advisor.frozen = (this.options.freezes ?? []).some(within);
    this.advisor.held = (this.options.canaries ?? []).filter(within).length;
    const { decision, signals } = this.advisor.decide(this.measure(now), (input, output) =>
      this.host.capacity(input, output),
    );
    this.act(decision.desired);
    this.timeline.push({
      t_s: Math.round(now) / 1000,
      desired: decision.desired,
      starting: this.fleet.count('starting'),
      ready: this.fleet.count('ready'),
      draining: this.fleet.count('draining'),
      queued: signals.queued,
      arrival_rps: round3(signals.arrivalRps),
      good_rps: round3(signals.goodRps),
      reason: decision.reason,
    });
    if (this.timeline.length > MAX_TIMELINE_SAMPLES) thin(this.timeline);
    if (!this.host.done()) this.clock.at(now + this.options.tickMs, () => this.tick());
  }

  private measure(now: Ms): FleetSignals {
    const loads = this.fleet.loads();
    const busy = this.fleet.busyMs();
    let engineWaiting = 0;
    let running = 0;
    let kv = 0;
    let busyMs = 0;
    let ready = 0;
    for (const g of this.fleet.groups) {
      if (g.state !== 'ready') continue;
      const l = loads[g.index];
      ready++;
      engineWaiting += l.waiting;
      running += l.running;
      kv += l.kvTotalBlocks > 0 ? l.kvUsedBlocks / l.kvTotalBlocks : 0;
      busyMs += busy[g.index] - (this.lastBusy[g.index] ?? 0);
    }
    this.lastBusy = busy;
    return {
      nowMs: now,
      ready,
      starting: this.fleet.count('starting'),
      draining: this.fleet.count('draining'),
      queued: this.host.queued(),
      engineWaiting,
      running,
      kvUsage: ready > 0 ? kv / ready : 0,
      utilization: ready > 0 ? Math.min(1, busyMs / (ready * this.options.tickMs)) : 0,
      fresh: true,
    };
  }

  private act(desired: number): void {
    const groups = this.fleet.groups;
    let current = this.fleet.count('ready') + this.fleet.count('starting');
    for (; current < desired; current++) {
      this.fleet.start();
      this.scaleEvents++;
    }
    // Scale-in: the newest starting group first (no capacity lost), then the ready group whose
    // loss costs the least locality, then the least loaded.
    for (let i = groups.length - 1; current > desired && i >= 0; i--) {
      if (groups[i].state !== 'starting') continue;
      this.fleet.drain(i);
      this.scaleEvents++;
      current--;
    }
    while (current > desired) {
      const victim = this.victim();
      if (victim < 0) break;
      this.fleet.drain(victim);
      this.scaleEvents++;
      current--;
    }
  }

  private victim(): number {
    let best = -1;
    let bestKey = Infinity;
    for (const g of this.fleet.groups) {
      if (g.state !== 'ready') continue;
      const key = this.host.cachedBlocks(g.index) * 1e6 + this.fleet.inFlight(g.index);
      if (key < bestKey) {
        best = g.index;
        bestKey = key;
      }
    }
    return best;
  }

  /** The report's account of scaling. */
  report(untilMs: Ms) {
    const groups = this.fleet.groups.filter((g) => g.requestedMs > 0 && g.readyMs !== Infinity);
    const stages = {} as Record<GroupStage, number>;
    for (const s of GROUP_STAGES) {
      stages[s] = round3(
        groups.reduce((a, g) => a + g.stages[s], 0) / Math.max(1, groups.length) / 1000,
      );
    }
    const readyTimes = groups.map((g) => (g.readyMs - g.requestedMs) / 1000);
    return {
      autoscaler: this.options.type,
      min_replicas: this.options.minReplicas,
      max_replicas: this.options.maxReplicas,
      scale_events: this.scaleEvents,
      reversals_in_window: reversals(this.timeline, this.options.scaleInWindowMs / 1000),
      lost_in_scale_in: 0,
      groups_started: groups.length,
      ready_time_s: {
        mean: round3(readyTimes.reduce((a, b) => a + b, 0) / Math.max(1, readyTimes.length)),
        by_stage: stages,
      },
      drained: this.fleet.groups.filter((g) => g.drainStartMs < untilMs).length,
    };
  }
}

/** Changes of scaling direction within `windowS` seconds of the previous change the other way. */
/** The most ticks a run's timeline keeps: past it (weeks of simulated time), every other. */
const MAX_TIMELINE_SAMPLES = 100_000;

/** Halves `timeline` in place, keeping every tick the desired count changed at. */
function thin(timeline: TimelineSample[]): void {
  let kept = 0;
  for (let i = 0; i < timeline.length; i++) {
    const changed = i > 0 && timeline[i].desired !== timeline[i - 1].desired;
    if (i % 2 === 0 || changed) timeline[kept++] = timeline[i];
  }
  timeline.length = kept;
}

function reversals(timeline: readonly TimelineSample[], windowS: number): number {
  let n = 0;
  let lastDir = 0;
  let lastAt = -Infinity;
  for (let i = 1; i < timeline.length; i++) {
    const dir = Math.sign(timeline[i].desired - timeline[i - 1].desired);
    if (dir === 0) continue;
    if (lastDir !== 0 && dir !== lastDir && timeline[i].t_s - lastAt < windowS) n++;
    lastDir = dir;
    lastAt = timeline[i].t_s;
  }
  return n;
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
