/**
 * What `/dashboard` draws, live: the same charts as a simulation's report, from the gateway's own
 * decision records, completed requests and autoscaling ticks, over a window that restarts every
 * `windowMs` (30 minutes: buckets stay a few seconds wide). The headline counts the window.
 * Everything here is in memory and bounded: a run timeline of at most 240 buckets, at most one
 * scaling tick per bucket kept.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { DecisionRecord } from '../core/observe/decision-record.ts';
import { SERVICE_WEIGHTS } from '../core/observe/outcome-accumulator.ts';
import type { RequestOutcome } from '../core/observe/request-outcome.ts';
import type { OutcomeRecord } from '../core/observe/outcome-record.ts';
import { offeredAtDoor, RunTimeline } from '../core/observe/run-timeline.ts';
import { BIN_RATIO, type CdfPoint } from '../core/observe/log-histogram.ts';
import type { ChartSpec, ReportDoc } from '../report/chart-spec.ts';
import {
  attainmentChart,
  cdf,
  DOOR_COLUMNS,
  goodputOverTime,
  replicasChart,
  timelineCharts,
  type ScaleTick,
} from '../report/sim-report.ts';
import type { ScaleGroups } from './scale-export.ts';

const WINDOW_MS = 30 * 60_000;
const MAX_TICKS = 720;

interface ClassCounts {
  offered: number;
  admitted: number;
  good: number;
}

export class DashboardFeed {
  private readonly clock: Clock;
  private readonly windowMs: number;
  private readonly info: { readonly policy: string; readonly model: string };
  private originMs = 0;
  private timeline!: RunTimeline;
  private ticks: ScaleTick[] = [];
  private classes = new Map<string, ClassCounts>();
  private rejected = 0;
  /** Attempts admitted, then not served: expired in the queue, or ended failed. */
  private failed = 0;

  constructor(
    clock: Clock,
    info: { readonly policy: string; readonly model: string },
    windowMs = WINDOW_MS,
  ) {
    this.clock = clock;
    this.info = info;
    this.windowMs = windowMs;
    this.restart();
  }

  decision(r: DecisionRecord): void {
    // What could not be read as a request — no key, a path not served, a body not JSON — is
    // not offered load: `/metrics` counts it apart (`goodput_invalid_requests_total`).
    if (r.class === null) return;
    this.roll();
    this.timeline.decision(r);
    if (!offeredAtDoor(r)) return;
    const a = r.admission;
    const c = this.classOf(r.class);
    c.offered++;
    if (a.result === 'admit' || a.result === 'degrade') c.admitted++;
    if (a.result === 'reject') this.rejected++;
    // A client that went away while it waited failed nobody.
    if (a.result === 'expire' || (a.result === 'abort' && a.reason !== 'client_closed')) {
      this.failed++;
    }
  }

  /**
   * How a dispatched attempt ended. The headline counts attempts, as `/metrics` does: one that
   * failed failed, whether or not its request was tried again (the retry is offered in turn).
   */
  ended(r: OutcomeRecord): void {
    this.roll();
    if (r.outcome.state === 'failed') this.failed++;
  }

  completed(o: RequestOutcome, atMs: number, good: boolean): void {
    this.roll();
    this.timeline.outcome(o, atMs, good);
    // Attainment is over the requests offered in this window: one offered before it began was
    // counted in the last.
    const offeredMs = atMs - (o.e2eMs ?? 0);
    if (good && offeredMs >= this.originMs) this.classOf(o.sloClass).good++;
  }

  scaleTick(g: ScaleGroups): void {
    this.roll();
    this.ticks.push({ t_s: (this.clock.now() - this.originMs) / 1000, ...g });
    if (this.ticks.length > MAX_TICKS) this.ticks.splice(0, this.ticks.length - MAX_TICKS);
  }

  /** The page's document; `readyBackends` draws the fleet when no autoscaler ticks. */
  doc(readyBackends: number): ReportDoc {
    this.roll();
    const data = this.timeline.data();
    const now = this.clock.now();
    // A window just begun is no rate's denominator: a second at least.
    const seconds = Math.max(1, (now - this.originMs) / 1000);
    let offered = 0;
    let admitted = 0;
    let good = 0;
    for (const c of this.classes.values()) {
      offered += c.offered;
      admitted += c.admitted;
      good += c.good;
    }
    const pct = (n: number, d: number) => (d > 0 ? `${((n / d) * 100).toFixed(2)}%` : '—');
    const last = this.ticks.at(-1);
    // The last tick's groups hold until now.
    const ticks =
      last !== undefined
        ? [...this.ticks, { ...last, t_s: seconds }]
        : [0, seconds].map((t_s) => ({
            t_s,
            desired: readyBackends,
            starting: 0,
            ready: readyBackends,
            draining: 0,
          }));
    return {
      title: `Goodput gateway — ${this.info.model}, policy ${this.info.policy}`,
      subtitle: `live · window of the last ${seconds.toFixed(0)} s (restarts every ${this.windowMs / 60_000} min) · refreshes every 2 s`,
      headline: {
        columns: DOOR_COLUMNS,
        rows: [
          [
            String(offered),
            String(admitted),
            String(this.rejected),
            String(this.failed),
            pct(good, offered),
            pct(good, admitted),
            (good / seconds).toFixed(2),
            `${quantile(data.ttft_cdf, 0.5)} / ${quantile(data.ttft_cdf, 0.99)}`,
            `${quantile(data.tpot_cdf, 0.5)} / ${quantile(data.tpot_cdf, 0.99)}`,
          ],
        ],
      },
      sections: [
        {
          title: 'Latency',
          charts: [
            cdf('ttft-cdf', 'TTFT distribution', [{ label: this.info.policy, cdf: data.ttft_cdf }]),
            cdf('tpot-cdf', 'TPOT distribution', [{ label: this.info.policy, cdf: data.tpot_cdf }]),
          ],
        },
        {
          title: 'Goodput and attainment',
          charts: [
            goodputOverTime([{ label: this.info.policy, timeline: data }]),
            this.attainmentChart(),
          ],
        },
        {
          title: 'Over time',
          charts: [
            ...timelineCharts(data, 0, SERVICE_WEIGHTS),
            replicasChart(
              0,
              ticks,
              this.ticks.length > 0
                ? 'Each autoscaling tick.'
                : 'No autoscaler: the backends ready now.',
            ),
          ],
        },
      ],
    };
  }

  private attainmentChart(): ChartSpec {
    const counts = this.classes;
    return attainmentChart([...counts.keys()].sort(), [
      {
        label: this.info.policy,
        at: (cls, d) => {
          const c = counts.get(cls);
          return c !== undefined && c[d] > 0 ? c.good / c[d] : null;
        },
      },
    ]);
  }

  private classOf(name: string): ClassCounts {
    let c = this.classes.get(name);
    if (c === undefined) {
      c = { offered: 0, admitted: 0, good: 0 };
      this.classes.set(name, c);
    }
    return c;
  }

  /** A new window once this one is `windowMs` old. */
  private roll(): void {
    if (this.clock.now() - this.originMs >= this.windowMs) this.restart();
  }

  private restart(): void {
    this.originMs = this.clock.now();
    this.timeline = new RunTimeline({ weights: SERVICE_WEIGHTS, originMs: this.originMs });
    this.ticks = [];
    this.classes = new Map();
    this.rejected = 0;
    this.failed = 0;
  }
}

/**
 * The q-quantile, ms, from a CDF of log-spaced bins: between the edges of the bin it falls in,
 * at its place in the bin's share, on the log scale the bins are spaced on (a bin's upper edge
 * read as the quantile ran up to a bin's width, 12%, high). A dash before any data.
 */
function quantile(points: readonly CdfPoint[], q: number): string {
  const i = points.findIndex((x) => x.p >= q);
  if (i < 0) return '—';
  const hi = points[i];
  const lo = points[i - 1] ?? { ms: hi.ms / BIN_RATIO, p: 0 };
  if (hi.p === lo.p) return hi.ms.toFixed(1);
  const at = (q - lo.p) / (hi.p - lo.p);
  return (lo.ms * Math.pow(hi.ms / lo.ms, at)).toFixed(1);
}
