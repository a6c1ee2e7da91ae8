/**
 * Scale-in's last check: a fluid simulation of the load on one group fewer. Over a horizon (the
 * scale-in window: how long the decision stands before it can be revisited), arrivals follow
 * the forecast — level plus trend, rising or not — and the groups left serve at their capacity
 * at SLO; what they cannot serve at once waits. The streams in flight beyond what the groups
 * left hold start as backlog. The load is kept when the backlog never needs longer than
 * `drainMs` to clear. A fluid model, not a replay: it sees rates, not the next burst, which is
 * what the burst headroom is for; what it catches is a scale-in that a rising trend, a backlog
 * or a full batch would make a mistake before the window is out.
 */
export interface FewerGroups {
  /** Groups left after the scale-in. */
  readonly groups: number;
  /** One group's capacity at SLO, requests per second, and the streams it holds at once. */
  readonly capacityRps: number;
  readonly streamsPerGroup: number;
  /** Forecast arrivals now (req/s) and their change per second. */
  readonly levelRps: number;
  readonly trendRpsPerS: number;
  /** Requests waiting and running now. */
  readonly queued: number;
  readonly running: number;
  readonly horizonMs: number;
  readonly drainMs: number;
}

/** Simulation step: fine enough for a five-minute horizon, few enough steps for every tick. */
const STEP_S = 5;

export function fewerGroupsHold(f: FewerGroups): boolean {
  if (f.groups <= 0) return false;
  const serve = f.groups * f.capacityRps;
  if (!(serve > 0)) return false;
  let backlog = f.queued + Math.max(0, f.running - f.groups * f.streamsPerGroup);
  const drainS = f.drainMs / 1000;
  for (let t = 0; t <= f.horizonMs / 1000; t += STEP_S) {
    const arriving = Math.max(0, f.levelRps + f.trendRpsPerS * t);
    backlog = Math.max(0, backlog + (arriving - serve) * STEP_S);
    if (backlog / serve > drainS) return false;
  }
  return true;
}
