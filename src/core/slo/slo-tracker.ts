/**
 * Keeps every SLO's score: fed each finished request, it adds the request's events to the
 * rolling counts of each objective of each SLO that covers it and does not exclude it, and
 * answers — at the clock's now — each objective's attainment and remaining error budget over
 * its window. Memory is fixed by the SLOs, not the traffic (rolling-counts.ts). `record` returns
 * what it added, so a host can count the same events for Prometheus to compute burn rates over
 * any window of its own.
 */
import type { Clock } from '../ports/clock.ts';
import type { Ms } from '../request/units.ts';
import { RollingCounts } from './rolling-counts.ts';
import { excludedBy, judge, type FinishedRequest } from './slo-events.ts';
import {
  covers,
  type Exclusion,
  type Objective,
  type ObjectiveKind,
  type SloDefinition,
  type Who,
} from './slo.ts';

export interface ObjectiveEvents {
  readonly slo: string;
  readonly objective: string;
  readonly kind: ObjectiveKind;
  readonly good: number;
  readonly bad: number;
}

export interface Recorded {
  readonly events: readonly ObjectiveEvents[];
  /** The SLOs that covered the request but excluded it, and why. */
  readonly excluded: readonly { readonly slo: string; readonly exclusion: Exclusion }[];
}

export interface ObjectiveStatus {
  readonly slo: string;
  readonly objective: string;
  readonly target: number;
  readonly good: number;
  readonly bad: number;
  /** good / (good + bad); 1 while the window holds no event. */
  readonly attainment: number;
  /**
   * 1 − bad / ((1 − target) · (good + bad)): 1 untouched, 0 spent, below 0 overspent; 1 while
   * the window holds no event.
   */
  readonly budgetRemaining: number;
}

interface Scored {
  readonly slo: SloDefinition;
  readonly objectives: readonly { readonly o: Objective; readonly counts: RollingCounts }[];
}

export class SloTracker {
  private readonly scored: readonly Scored[];
  private readonly clock: Clock;

  constructor(slos: readonly SloDefinition[], clock: Clock) {
    this.clock = clock;
    this.scored = slos.map((slo) => ({
      slo,
      objectives: slo.objectives.map((o) => ({ o, counts: new RollingCounts(slo.windowMs) })),
    }));
  }

  /** The token-gap thresholds of the SLOs covering `who`: what its gaps must be counted against. */
  gapThresholds(who: Who): Ms[] {
    const out: Ms[] = [];
    for (const { slo } of this.scored) {
      if (!covers(slo.population, who)) continue;
      for (const o of slo.objectives) if (o.kind === 'token_gap') out.push(o.thresholdMs);
    }
    return out;
  }

  record(r: FinishedRequest): Recorded {
    const now = this.clock.now();
    const events: ObjectiveEvents[] = [];
    const excluded: { slo: string; exclusion: Exclusion }[] = [];
    for (const { slo, objectives } of this.scored) {
      if (!covers(slo.population, r)) continue;
      const exclusion = excludedBy(r, slo.exclusions);
      if (exclusion !== undefined) {
        excluded.push({ slo: slo.name, exclusion });
        continue;
      }
      for (const { o, counts } of objectives) {
        const c = judge(o, r);
        if (c === null) continue;
        counts.add(now, c.good, c.bad);
        events.push({ slo: slo.name, objective: o.name, kind: o.kind, good: c.good, bad: c.bad });
      }
    }
    return { events, excluded };
  }

  status(): ObjectiveStatus[] {
    const now = this.clock.now();
    return this.scored.flatMap(({ slo, objectives }) =>
      objectives.map(({ o, counts }) => {
        const { good, bad } = counts.read(now);
        const total = good + bad;
        return {
          slo: slo.name,
          objective: o.name,
          target: o.target,
          good,
          bad,
          attainment: total === 0 ? 1 : good / total,
          budgetRemaining: total === 0 ? 1 : 1 - bad / ((1 - o.target) * total),
        };
      }),
    );
  }
}
