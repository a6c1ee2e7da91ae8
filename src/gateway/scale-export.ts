/**
 * The gateway's autoscaler: every tick its backends' loads and its queue become the signals,
 * the shared controller decides (`../core/autoscale/advisor.ts`), and the decision is exported —
 * `goodput_desired_replicas{pool}`, the signals behind it, the decisions by reason — for KEDA or
 * an HPA on external metrics to act on. Without a pool the gateway starts and stops nothing: the
 * ready groups are its usable backends, none starting or draining. With an engine pool (local
 * processes, `local-pool.ts`; a Kubernetes object, `kube-pool.ts`) the pool counts its groups
 * and acts on the decision — where gateways share the object, only the one that leads. With
 * peers (gateways sharing Redis: `peer-windows.ts`) each tick adds the others' demand to its own.
 */
import { ScaleAdvisor } from '../core/autoscale/advisor.ts';
import type { CapacityEnvelope } from '../core/autoscale/capacity-envelope.ts';
import type { ScaleLimits } from '../core/autoscale/autoscaler.ts';
import { AUTOSCALERS } from '../core/autoscale/controllers.ts';
import type { GroupCapacity } from '../core/autoscale/scale-window.ts';
import type { ReplicaSnapshot } from '../core/fleet/replica-snapshot.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { Ms } from '../core/request/units.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import type { ScalePeers } from './peer-windows.ts';

export interface ScaleExportSettings {
  readonly type: string;
  readonly limits: ScaleLimits;
  /** An actuator on this machine (`--engine-pool local`); absent: the decision is only exported. */
  readonly pool?: ScalePool;
  /** A measured capacity envelope, in place of the model's rate (`--capacity-envelope`). */
  readonly envelope?: CapacityEnvelope;
  /** The other gateway replicas of the fleet, whose demand each decision adds (peer-windows.ts). */
  readonly peers?: ScalePeers;
}

/** What a tick reads of the gateway. */
export interface ScaleSources {
  readonly clock: Clock;
  readonly timers: Timers;
  readonly metrics: GatewayMetrics;
  snapshots(): readonly ReplicaSnapshot[];
  queued(): number;
  /** Whether the backends' figures are fresh (no scale-in on stale ones). */
  fresh(): boolean;
  /** One group's capacity at SLO for requests of these mean sizes. */
  capacity(input: number, output: number): GroupCapacity;
  /** Told each tick's groups: desired, and as counted (the dashboard's replica chart). */
  onTick?(groups: ScaleGroups): void;
}

export interface ScaleGroups {
  readonly desired: number;
  readonly starting: number;
  readonly ready: number;
  readonly draining: number;
}

/** What a pool reads and sets of the gateway's backends, one per slot. */
export interface PoolFleet {
  isReady(slot: number): boolean;
  /** Draining: no new request routed to it; those under way go on. */
  setDraining(slot: number, on: boolean): void;
  inFlightOn(slot: number): number;
  /**
   * Requests the replica itself last reported running or waiting (every gateway's), and when
   * the figures were taken; undefined while it has none fresh.
   */
  reportedOn(slot: number): { readonly busy: number; readonly atMs: Ms } | undefined;
  /** Which slots the pool runs now: a slot it stopped (or never started) is down as meant. */
  running(runs: (slot: number) => boolean): void;
}

/** An actuator that starts and drains groups, each a backend of the gateway. */
export interface ScalePool {
  /** The backends it acts on; from then on it may start and drain. */
  attach(fleet: PoolFleet): void;
  count(state: 'starting' | 'ready' | 'draining'): number;
  apply(desired: number): void;
  /** Drains finished so far, and streams a drain's time limit cut. */
  readonly drained: number;
  readonly cut: number;
  /** Replica counts set on a cluster, and those its API refused (the Kubernetes pool's). */
  readonly resizes?: { readonly ok: number; readonly error: number };
  /** Whether it acts on the decisions: another gateway may lead (a Kubernetes pool's election). */
  readonly leading: boolean;
  /**
   * An operator's freeze as the gateways sharing the pool hold it (whichever leads obeys it);
   * undefined where the pool is this gateway's alone.
   */
  readonly frozen?: boolean;
  /** Freezes or thaws every gateway sharing the pool. */
  freeze?(frozen: boolean): void;
  /** Stops all it started. */
  close(): Promise<void>;
}

/**
 * `pool` acts on `fleet` from now on, with at least `minReplicas` serving at once. Never fewer
 * than it serves: a gateway that starts (a restart, one more in a rolling update) beside replicas
 * already streaming leaves a scale-in to its autoscaler — its window, one group at a time.
 */
export function startPool(pool: ScalePool, fleet: PoolFleet, minReplicas: number): void {
  pool.attach(fleet);
  pool.apply(Math.max(minReplicas, pool.count('starting') + pool.count('ready')));
}

export class ScaleExport {
  /** The controller, and what it counts between ticks (the gateway feeds `window`). */
  readonly advisor: ScaleAdvisor;
  private readonly sources: ScaleSources;
  private readonly pool: ScalePool | undefined;
  private readonly peers: ScalePeers | undefined;
  /** The pool's drain counts at the last tick, for the counter's increments. */
  private drainsSeen = { drained: 0, cut: 0 };
  /** The pool's resizes at the last tick, likewise. */
  private resizesSeen = { ok: 0, error: 0 };
  private timer: TimerHandle | null = null;

  constructor(settings: ScaleExportSettings, sources: ScaleSources) {
    this.advisor = new ScaleAdvisor(AUTOSCALERS[settings.type], settings.limits);
    this.sources = sources;
    this.pool = settings.pool;
    this.peers = settings.peers;
    this.schedule();
  }

  /** An operator's freeze or thaw: decisions are not taken while frozen (`ScaleAdvisor.frozen`). */
  get frozen(): boolean {
    return this.advisor.frozen;
  }

  set frozen(frozen: boolean) {
    this.hold(frozen);
    this.pool?.freeze?.(frozen);
  }

  private hold(frozen: boolean): void {
    this.advisor.frozen = frozen;
    this.sources.metrics.scale.autoscaleFrozen.set(frozen ? 1 : 0);
  }

  close(): void {
    this.timer?.cancel();
    this.timer = null;
  }

  private schedule(): void {
    const { clock, timers } = this.sources;
    this.timer = timers.at(clock.now() + this.advisor.limits.tickMs, () => {
      this.tick();
      this.schedule();
    });
  }

  /** One tick: measure, decide, act (with a pool), export. */
  tick(): void {
    const s = this.sources;
    // A freeze set through another gateway sharing the pool holds this one too.
    const shared = this.pool?.frozen;
    if (shared !== undefined && shared !== this.advisor.frozen) this.hold(shared);
    const replicas = s.snapshots();
    let engineWaiting = 0;
    let running = 0;
    let kv = 0;
    for (const r of replicas) {
      engineWaiting += r.waiting;
      running += r.running;
      kv += r.kvUsage;
    }
    // The other replicas' demand: their queues, and (in `decide`) their windows.
    const others = this.peers?.others() ?? [];
    const queued = s.queued();
    const { decision, signals, share } = this.advisor.decide(
      {
        nowMs: s.clock.now(),
        ready: this.pool?.count('ready') ?? replicas.length,
        starting: this.pool?.count('starting') ?? 0,
        draining: this.pool?.count('draining') ?? 0,
        queued: others.reduce((n, o) => n + o.queued, queued),
        engineWaiting,
        running,
        kvUsage: replicas.length > 0 ? kv / replicas.length : 0,
        // A backend's GPU busy time is not among the metrics it exports.
        utilization: 0,
        fresh: s.fresh(),
      },
      (input, output) => s.capacity(input, output),
      others,
    );
    this.peers?.post({ ...share, queued });
    this.pool?.apply(decision.desired);
    s.onTick?.({
      desired: decision.desired,
      starting: signals.starting,
      ready: signals.ready,
      draining: signals.draining,
    });
    const m = s.metrics;
    m.scale.desiredReplicas.set({ pool: 'default' }, decision.desired);
    m.scale.autoscaleDecisions.inc({ reason: decision.reason });
    const named: Record<string, number> = {
      arrival_rps: signals.arrivalRps,
      good_rps: signals.goodRps,
      queued: signals.queued,
      engine_waiting: signals.engineWaiting,
      ready: signals.ready,
      capacity_rps: signals.model?.rps ?? 0,
      capacity_streams: signals.model?.streams ?? 0,
    };
    for (const [signal, value] of Object.entries(named))
      m.scale.autoscaleSignals.set({ signal }, value);
    if (this.peers !== undefined) m.scale.autoscalePeers.set(others.length);
    const pool = this.pool;
    if (pool === undefined) return;
    for (const state of ['starting', 'ready', 'draining'] as const) {
      m.scale.poolEngines.set({ state }, pool.count(state));
    }
    m.scale.poolLeader.set(pool.leading ? 1 : 0);
    m.scale.poolDrains.inc({ outcome: 'drained' }, pool.drained - this.drainsSeen.drained);
    m.scale.poolDrains.inc({ outcome: 'cut' }, pool.cut - this.drainsSeen.cut);
    this.drainsSeen = { drained: pool.drained, cut: pool.cut };
    const resizes = pool.resizes;
    if (resizes === undefined) return;
    m.scale.poolResizes.inc({ result: 'ok' }, resizes.ok - this.resizesSeen.ok);
    m.scale.poolResizes.inc({ result: 'error' }, resizes.error - this.resizesSeen.error);
    this.resizesSeen = { ...resizes };
  }
}
