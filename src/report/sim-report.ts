/**
 * The report page of `simulate` and `compare`: a headline table with one row per policy, then
 * TTFT and TPOT CDFs, goodput against offered load over time, attainment by class on both
 * denominators, and per policy: the door's outcomes and reasons, each tenant's share of
 * service, the wait the door predicted and the least slack it admitted with, and the replica
 * groups desired, starting and ready. Every chart comes from the report and the run's timeline,
 * both deterministic for a seed.
 */
import type { Report } from '../core/observe/report.ts';
import type { TimelineData } from '../core/observe/run-timeline.ts';
import {
  seriesByKey,
  timePoints,
  type ChartSpec,
  type PageSection,
  type ReportDoc,
  type Series,
} from './chart-spec.ts';

/** The headline's columns for what happened at the door, in every report of a control plane. */
export const DOOR_COLUMNS = [
  'offered',
  'admitted',
  'rejected',
  // Admitted, then not served: expired in the queue, its stream cut, its backend failed.
  'failed',
  'attainment (offered)',
  'attainment (admitted)',
  'goodput req/s',
  'TTFT p50 / p99 ms',
  'TPOT p50 / p99 ms',
];

export interface SimRun {
  readonly report: Report;
  readonly timeline: TimelineData;
}

const pct = (x: number | null | undefined) =>
  x === null || x === undefined ? '—' : `${(x * 100).toFixed(2)}%`;
const ms = (x: number) => `${x.toFixed(1)}`;
/** A latency's p50 / p99 in ms; a dash where nothing was measured. */
const p50p99 = (d: { p50: number; p99: number; count: number }) =>
  d.count === 0 ? '—' : `${ms(d.p50)} / ${ms(d.p99)}`;

export function simReportDoc(runs: readonly SimRun[], command: string): ReportDoc {
  const first = runs[0].report;
  const label = (r: Report) => r.policy;
  return {
    title:
      runs.length === 1
        ? `Goodput simulation — ${first.policy}`
        : `Goodput comparison — ${runs.map((r) => label(r.report)).join(' vs ')}`,
    // Each policy's run lasts as long as its requests take: each is said.
    subtitle: `${command}\nseed ${first.seed} · ${runs.map((r) => `${r.report.duration_s.toFixed(1)} s`).join(' / ')} simulated · ${first.offered.requests} requests offered`,
    headline: {
      columns: ['policy', ...DOOR_COLUMNS, 'GPU-s per good'],
      rows: runs.map(({ report: r }) => [
        label(r),
        String(r.admission.offered),
        String(r.admission.admitted),
        String(r.admission.rejected),
        String(r.failed),
        pct(r.slo.attainment_offered),
        // Over none admitted, nothing was attained or missed.
        r.admission.admitted === 0 ? '—' : pct(r.slo.attainment_admitted),
        r.goodput.requests_per_s.toFixed(3),
        p50p99(r.latency_ms.ttft),
        p50p99(r.latency_ms.tpot),
        r.cost.gpu_seconds_per_good_request === null
          ? '—'
          : r.cost.gpu_seconds_per_good_request.toFixed(3),
      ]),
    },
    sections: [
      {
        title: 'Latency',
        charts: [
          cdf(
            'ttft-cdf',
            'TTFT distribution',
            runs.map((r) => ({ label: label(r.report), cdf: r.timeline.ttft_cdf })),
          ),
          cdf(
            'tpot-cdf',
            'TPOT distribution',
            runs.map((r) => ({ label: label(r.report), cdf: r.timeline.tpot_cdf })),
          ),
        ],
      },
      {
        title: 'Goodput and attainment',
        charts: [
          goodputOverTime(runs.map((r) => ({ label: label(r.report), timeline: r.timeline }))),
          attainmentByClass(runs.map((r) => r.report)),
        ],
      },
      ...runs.map((run, i) => perRun(run, i, runs.length > 1)),
    ],
  };
}

export function cdf(
  id: string,
  title: string,
  runs: readonly { label: string; cdf: TimelineData['ttft_cdf'] }[],
): ChartSpec {
  return {
    id,
    title,
    kind: 'step',
    x: { title: 'ms (log scale)', log: true },
    y: { title: 'fraction of requests ≤ x', min: 0, max: 1 },
    series: runs.map((r) => ({ label: r.label, points: r.cdf.map((p) => [p.ms, p.p] as const) })),
    note: 'Completed requests; 20 bins a decade.',
  };
}

/** What a chart calls its good requests, what makes one good, and the chart's title. */
export interface Judged {
  readonly name: string;
  readonly means: string;
  readonly title: string;
}

const BY_CLASS: Judged = {
  name: 'good',
  means: 'completed within every objective of its class',
  title: 'Goodput against offered load',
};

export function goodputOverTime(
  runs: readonly { label: string; timeline: TimelineData }[],
  judged: Judged = BY_CLASS,
): ChartSpec {
  const offered: Series = {
    label: 'offered',
    dashed: true,
    points: timePoints(runs[0].timeline.t_s, runs[0].timeline.offered_rps),
  };
  return {
    id: 'goodput-time',
    title: judged.title,
    kind: 'line',
    x: { title: 'time (s)' },
    y: { title: 'requests / s', min: 0 },
    series: [
      offered,
      ...runs.map((r) => ({
        label: `${judged.name} · ${r.label}`,
        points: timePoints(r.timeline.t_s, r.timeline.good_rps),
      })),
    ],
    note: `Buckets of ${runs[0].timeline.bucket_s} s; ${judged.name} = ${judged.means}.`,
  };
}

function attainmentByClass(reports: readonly Report[]): ChartSpec {
  type ByClass = Record<
    string,
    { admitted: number; attainment_offered: number; attainment_admitted: number }
  >;
  const classes = [...new Set(reports.flatMap((r) => Object.keys(r.slo.by_class)))].sort();
  return attainmentChart(
    classes,
    reports.map((r) => ({
      label: r.policy,
      at: (c, d) => {
        const cls = (r.slo.by_class as ByClass)[c];
        // Over none admitted, nothing was attained or missed: no bar, as the headline's dash.
        if (cls === undefined || (d === 'admitted' && cls.admitted === 0)) return null;
        return cls[`attainment_${d}`];
      },
    })),
  );
}

/**
 * Attainment by class on both denominators, a pair of bars per class for each source (a
 * policy, or the gateway itself); `at` gives good ÷ offered or good ÷ admitted, null for none.
 */
export function attainmentChart(
  classes: readonly string[],
  sources: readonly {
    readonly label: string;
    at(cls: string, denominator: 'offered' | 'admitted'): number | null;
  }[],
): ChartSpec {
  return {
    id: 'attainment-class',
    title: 'Attainment by class, offered and admitted',
    kind: 'bar',
    x: { title: 'class', categories: classes },
    y: { title: 'attainment', min: 0, max: 1 },
    series: sources.flatMap((s) =>
      (['offered', 'admitted'] as const).map((d) => ({
        label: `${s.label} · ${d}`,
        points: classes.map((c, i) => [i, s.at(c, d)] as const),
      })),
    ),
    note: 'Good requests over offered (refusals count against it) and over admitted.',
  };
}

function perRun({ report, timeline }: SimRun, i: number, named: boolean): PageSection {
  const suffix = named ? ` — ${report.policy}` : '';
  const ticks = (report.autoscale?.timeline as readonly ScaleTick[] | undefined) ?? [];
  return {
    title: `Over time${suffix}`,
    charts: timelineCharts(timeline, i, report.tenant_service_weights).concat(
      ticks.length > 0
        ? replicasChart(i, ticks, `Autoscaler ${String(report.autoscale?.autoscaler)}.`)
        : replicasChart(
            i,
            timeline.t_s.map((t_s) => ({
              t_s,
              desired: report.fleet.replicas,
              starting: 0,
              ready: report.fleet.replicas,
              draining: 0,
            })),
            'No autoscaler: the fleet is fixed.',
          ),
    ),
  };
}

/** The door's outcomes, tenant shares and predicted wait over time: what any host's timeline draws. */
export function timelineCharts(
  timeline: TimelineData,
  i: number,
  weights: { readonly input: number; readonly output: number },
): ChartSpec[] {
  const t = timeline.t_s;
  return [
    {
      id: `outcomes-${i}`,
      title: 'Admission outcomes and reasons',
      kind: 'area',
      x: { title: 'time (s)' },
      y: { title: 'requests per bucket', min: 0 },
      series: seriesByKey(t, timeline.outcomes),
      note: 'reject:<reason> at the door, expire:<reason> in the queue, cut:<reason> after dispatch.',
    },
    {
      id: `tenant-share-${i}`,
      title: 'Service share by tenant',
      kind: 'area',
      x: { title: 'time (s)' },
      y: { title: 'share of weighted tokens served', min: 0, max: 1 },
      series: seriesByKey(t, timeline.tenant_share),
      note: `Weighted tokens: input × ${weights.input} + output × ${weights.output}, counted at completion.`,
    },
    {
      id: `queue-${i}`,
      title: 'Queue wait predicted at the door, least slack admitted',
      kind: 'line',
      x: { title: 'time (s)' },
      y: { title: 'ms' },
      series: [
        { label: 'predicted wait (mean)', points: timePoints(t, timeline.predicted_wait_ms) },
        { label: 'least slack admitted', points: timePoints(t, timeline.min_slack_ms) },
      ],
    },
  ];
}

export interface ScaleTick {
  readonly t_s: number;
  readonly desired: number;
  readonly starting: number;
  readonly ready: number;
  readonly draining: number;
}

export function replicasChart(i: number, ticks: readonly ScaleTick[], note: string): ChartSpec {
  return {
    id: `replicas-${i}`,
    title: 'Replica groups: desired, starting, ready',
    // Groups change at ticks and hold between them.
    kind: 'step',
    x: { title: 'time (s)' },
    y: { title: 'groups', min: 0 },
    series: (['desired', 'starting', 'ready', 'draining'] as const).map((k) => ({
      label: k,
      dashed: k === 'desired',
      points: ticks.map((x) => [x.t_s, x[k]] as const),
    })),
    note,
  };
}
