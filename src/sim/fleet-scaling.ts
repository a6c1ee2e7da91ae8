/**
 * The autoscaling of a simulated fleet: a loop for its replicas and, when the fleet is
 * disaggregated with a prefill pool allowed to grow, a loop of the pool's own — two pools, each
 * on its own signals. The gateway queue is the prefill pool's while the pool has its next steps
 * queued (`prefill-fit` holds requests there), else the replicas'. Both loops count the same
 * arrivals and outcomes: complete-request goodput is what each scales for.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { Timers } from '../core/ports/timers.ts';
import type { Ms } from '../core/request/units.ts';
import type { SloClass, SloClassName } from '../core/request/slo-classes.ts';
import type { FlowControl } from '../core/routing/flow-control.ts';
import { PREFILL_BACKLOG_STEPS } from '../core/routing/filters.ts';
import { withEnvelope } from '../core/autoscale/capacity-envelope.ts';
import {
  capacityModel,
  prefillGroupCapacity,
  type ScaleWindow,
} from '../core/autoscale/scale-window.ts';
import { AutoscaleLoop, type AutoscaleOptions } from './autoscaling.ts';
import type { Fleet, PrefillSpec } from './fleet.ts';

/** What the loops read of the simulation besides the fleet. */
export interface ScalingHost {
  /** Requests waiting at the control plane now. */
  queued(): number;
  /** Prefix blocks the router believes replica `index` holds. */
  cachedBlocks(index: number): number;
  /** Whether every request has arrived and ended. */
  done(): boolean;
  readonly flow: FlowControl;
  /** The replicas' measured pace now (`ReplicaLedger.meanPace`). */
  pace(): number;
  readonly classes: Readonly<Record<SloClassName, SloClass>>;
  /** A step's token budget: what one prefill step computes. */
  readonly maxBatchedTokens: number;
}

export class FleetScaling {
  readonly replicas: AutoscaleLoop;
  /** The prefill pool's loop; null unless the fleet is disaggregated with room to grow it. */
  readonly prefill: AutoscaleLoop | null;
  /** Every loop's window: each counts the arrivals and outcomes. */
  readonly windows: readonly ScaleWindow[];

  constructor(
    options: AutoscaleOptions,
    fleet: Fleet,
    host: ScalingHost,
    clock: Clock & Timers,
    /** The prefill pool's floor (its start) and ceiling, when the fleet has one. */
    prefill?: PrefillSpec,
  ) {
    const pool = fleet.prefill;
    const prefillBound = () => (pool?.backlogSteps() ?? 0) >= PREFILL_BACKLOG_STEPS;
    this.replicas = new AutoscaleLoop(
      options,
      fleet,
      {
        queued: () => (prefillBound() ? 0 : host.queued()),
        cachedBlocks: (index) => host.cachedBlocks(index),
        done: () => host.done(),
        capacity: withEnvelope(
          capacityModel(host.flow, host.classes, pool !== undefined, () => host.pace()),
          options.envelope,
        ),
      },
      clock,
    );
    const max = prefill?.maxReplicas ?? prefill?.replicas ?? 0;
    this.prefill =
      pool === undefined || prefill === undefined || max <= prefill.replicas
        ? null
        : new AutoscaleLoop(
            { ...options, minReplicas: prefill.replicas, maxReplicas: max },
            pool,
            {
              queued: () => (prefillBound() ? host.queued() : 0),
              cachedBlocks: () => 0,
              done: () => host.done(),
              capacity: (input) => prefillGroupCapacity(host.flow, host.maxBatchedTokens, input),
            },
            clock,
          );
    this.windows = [this.replicas, this.prefill].flatMap((l) =>
      l === null ? [] : [l.advisor.window],
    );
  }

  start(): void {
    this.replicas.start();
    this.prefill?.start();
  }

  /** The report's `autoscale` section: the replicas' loop, and the prefill pool's within it. */
  report(untilMs: Ms) {
    const loop = (l: AutoscaleLoop) => ({ ...l.report(untilMs), timeline: l.timeline });
    return {
      ...loop(this.replicas),
      ...(this.prefill === null ? {} : { prefill: loop(this.prefill) }),
    };
  }
}
