/**
 * An autoscaler at run time, for any host: it counts what happens between ticks
 * (`ScaleWindow`), and each tick combines that with the host's view of its fleet into the
 * signals, asks the autoscaler, and returns its decision with the signals behind it. The
 * simulator acts on the decision; the gateway exports it for an external actuator. A host that
 * shares its fleet with others (gateway replicas) adds their ticks' shares to its own, so each
 * decides on the fleet's demand, not on the part a load balancer sent it.
 */
import type { Autoscaler, ScaleDecision, ScaleLimits, ScaleSignals } from './autoscaler.ts';
import { ScaleWindow, windowRates, type GroupCapacity, type WindowShare } from './scale-window.ts';

/** What the host measures of its fleet at a tick. */
export type FleetSignals = Omit<ScaleSignals, 'arrivalRps' | 'goodRps' | 'missedRps' | 'model'>;

export class ScaleAdvisor {
  readonly window = new ScaleWindow();
  readonly limits: ScaleLimits;
  private readonly autoscaler: Autoscaler;
  private readonly state: unknown;
  /**
   * An operator's hold (a freeze for an incident or a rollout): each tick keeps the groups there
   * are. The autoscaler still decides on every tick's signals — its forecast and correction keep
   * learning — but its decision is not taken until the freeze is lifted.
   */
  frozen = false;
  /**
   * Groups' worth of the pool's GPUs held by something else now (a canary of a rollout): the
   * autoscaler's ceiling is lowered by as many while they are held.
   */
  held = 0;

  constructor(autoscaler: Autoscaler, limits: ScaleLimits) {
    this.autoscaler = autoscaler;
    this.limits = limits;
    this.state = autoscaler.initState();
  }

  /**
   * The tick's decision. `capacity` is one group's capacity at SLO for requests of these mean
   * sizes, as the host's step-time model predicts it; `others` the latest shares of the hosts
   * this one shares the fleet with. `share` is this host's, for them.
   */
  decide(
    fleet: FleetSignals,
    capacity: (inputTokens: number, outputTokens: number) => GroupCapacity,
    others: readonly WindowShare[] = [],
  ): {
    readonly decision: ScaleDecision;
    readonly signals: ScaleSignals;
    readonly share: WindowShare;
  } {
    const share = this.window.share(this.limits.tickMs);
    const { arrivalRps, goodRps, missedRps, mix } = windowRates([share, ...others]);
    const signals: ScaleSignals = {
      ...fleet,
      arrivalRps,
      goodRps,
      missedRps,
      ...(mix === null ? {} : { model: capacity(mix.input, mix.output) }),
    };
    const limits =
      this.held > 0
        ? {
            ...this.limits,
            maxReplicas: Math.max(this.limits.minReplicas, this.limits.maxReplicas - this.held),
          }
        : this.limits;
    const decision = this.autoscaler.decide(this.state, signals, limits);
    if (!this.frozen) return { decision, signals, share };
    const held = { desired: fleet.ready + fleet.starting, reason: 'frozen' } as const;
    return { decision: held, signals, share };
  }
}
