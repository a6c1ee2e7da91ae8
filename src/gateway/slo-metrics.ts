/**
 * The SLOs' Prometheus metrics, on the gateway's registry. The counters are the source of truth
 * across restarts and gateway replicas — `goodput_slo_events_total{slo,objective,kind,outcome}` is
 * what alert rules compute burn rates from, over windows of their own — and the target gauge
 * lets one rule serve every SLO. The attainment and budget gauges are this process's rolling
 * view (core/slo/slo-tracker.ts), read at scrape time. Labels are SLO and objective names from
 * the policy, and closed sets.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ObjectiveStatus } from '../core/slo/slo-tracker.ts';
import { formatDuration } from '../core/slo/duration.ts';
import type { SloDefinition } from '../core/slo/slo.ts';

export class SloMetrics {
  readonly events: Counter<'slo' | 'objective' | 'kind' | 'outcome'>;
  readonly excluded: Counter<'slo' | 'exclusion'>;
  private readonly target: Gauge<'slo' | 'objective' | 'kind'>;
  private readonly info: Gauge<'slo' | 'window' | 'policy_revision'>;
  /** The tracker's view, read at scrape time (set by `declare`). */
  private status: () => readonly ObjectiveStatus[] = () => [];

  constructor(registry: Registry) {
    const registers = [registry];
    this.events = new Counter({
      name: 'goodput_slo_events_total',
      help: "Events judged against an SLO's objective, good or bad: requests (kind success, ttft, e2e) or token gaps (token_gap).",
      labelNames: ['slo', 'objective', 'kind', 'outcome'],
      registers,
    });
    this.excluded = new Counter({
      name: 'goodput_slo_excluded_requests_total',
      help: 'Requests an SLO covered but left out, by its exclusion that applied.',
      labelNames: ['slo', 'exclusion'],
      registers,
    });
    this.target = new Gauge({
      name: 'goodput_slo_objective_target',
      help: "The fraction of an objective's events that must be good; 1 − target is its error budget.",
      labelNames: ['slo', 'objective', 'kind'],
      registers,
    });
    this.info = new Gauge({
      name: 'goodput_slo_info',
      help: 'The SLOs in force (value 1), with their window and the policy revision they were defined under.',
      labelNames: ['slo', 'window', 'policy_revision'],
      registers,
    });
    const status = () => this.status();
    new Gauge({
      name: 'goodput_slo_attainment',
      help: "Fraction of an objective's events that were good over the SLO's rolling window, in this process (1 with none).",
      labelNames: ['slo', 'objective'],
      registers,
      collect() {
        for (const s of status()) this.set({ slo: s.slo, objective: s.objective }, s.attainment);
      },
    });
    new Gauge({
      name: 'goodput_slo_error_budget_remaining',
      help: "Fraction of an objective's error budget left over the SLO's rolling window, in this process: 1 untouched, 0 spent, below 0 overspent.",
      labelNames: ['slo', 'objective'],
      registers,
      collect() {
        for (const s of status()) {
          this.set({ slo: s.slo, objective: s.objective }, s.budgetRemaining);
        }
      },
    });
  }

  /** The SLOs in force: their targets, and every count at 0 so rates exist from the start. */
  declare(slos: readonly SloDefinition[], status: () => readonly ObjectiveStatus[]): void {
    this.status = status;
    for (const s of slos) {
      this.info.set(
        { slo: s.name, window: formatDuration(s.windowMs), policy_revision: s.revision },
        1,
      );
      for (const o of s.objectives) {
        const labels = { slo: s.name, objective: o.name, kind: o.kind };
        this.target.set(labels, o.target);
        for (const outcome of ['good', 'bad']) this.events.inc({ ...labels, outcome }, 0);
      }
      for (const exclusion of s.exclusions) this.excluded.inc({ slo: s.name, exclusion }, 0);
    }
  }
}
