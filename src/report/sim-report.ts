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

export interface SimRun {
  readonly report: Report;
  readonly timeline: TimelineData;
}

const pct = (x: number | null | undefined) =>
  x === null || x === undefined ? '—' : `${(x * 100).toFixed(2)}%`;
const ms = (x: number) => `${x.toFixed(1)}`;

export function simReportDoc(runs: readonly SimRun[], command: string): ReportDoc {
  const first = runs[0].report;
  const label = (r: Report) => r.policy;
  return {
    title:
      runs.length === 1
        ? `Goodput simulation — ${first.policy}`
        : `Goodput comparison — ${runs.map((r) => label(r.report)).join(' vs ')}`,
    subtitle: `${command}\nseed ${first.seed} · ${first.duration_s.toFixed(1)} s simulated · ${first.offered.requests} requests offered`,
    headline: {
      columns: [
        'policy',
        'offered',
        'admitted',
        'rejected',
        'attainment (offered)',
        'attainment (admitted)',
        'goodput req/s',
        'TTFT p50 / p99 ms',
        'TPOT p50 / p99 ms',
        'GPU-s per good',
      ],
      rows: runs.map(({ report: r }) => [
        label(r),
        String(r.admission.offered),
        String(r.admission.admitted),
        String(r.admission.rejected),
        pct(r.slo.attainment_offered),
        pct(r.slo.attainment_admitted),
        r.goodput.requests_per_s.toFixed(3),
        `${ms(r.latency_ms.ttft.p50)} / ${ms(r.latency_ms.ttft.p99)}`,
        `${ms(r.latency_ms.tpot.p50)} / ${ms(r.latency_ms.tpot.p99)}`,
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

export function goodputOverTime(
  runs: readonly { label: string; timeline: TimelineData }[],
): ChartSpec {
  const offered: Series = {
    label: 'offered',
    dashed: true,
    points: timePoints(runs[0].timeline.t_s, runs[0].timeline.offered_rps),
  };
  return {
    id: 'goodput-time',
    title: 'Goodput against offered load',
    kind: 'line',
    x: { title: 'time (s)' },
    y: { title: 'requests / s', min: 0 },
    series: [
      offered,
      ...runs.map((r) => ({
        label: `good · ${r.label}`,
        points: timePoints(r.timeline.t_s, r.timeline.good_rps),
      })),
    ],
    note: `Buckets of ${runs[0].timeline.bucket_s} s; good = completed within every objective of its class.`,
  };
}

function attainmentByClass(reports: readonly Report[]): ChartSpec {
  const classes = [...new Set(reports.flatMap((r) => Object.keys(r.slo.by_class)))].sort();
  const byClass = (r: Report, c: string) =>
    (r.slo.by_class as Record<string, { attainment_offered: number; attainment_admitted: number }>)[
      c
    ];
  return {
    id: 'attainment-class',
    title: 'Attainment by class, offered and admitted',
    kind: 'bar',
    x: { title: 'class', categories: classes },
    y: { title: 'attainment', min: 0, max: 1 },
    series: reports.flatMap((r) =>
      (['offered', 'admitted'] as const).map((d) => ({
        label: `${r.policy} · ${d}`,
        points: classes.map((c, i) => [i, byClass(r, c)?.[`attainment_${d}`] ?? null] as const),
      })),
    ),
    note: 'Good requests over offered (refusals count against it) and over admitted.',
  };
}

function perRun({ report, timeline }: SimRun, i: number, named: boolean): PageSection {
  const suffix = named ? ` — ${report.policy}` : '';
  const t = timeline.t_s;
  const charts: ChartSpec[] = [
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
      note: `Weighted tokens: input × ${report.tenant_service_weights.input} + output × ${report.tenant_service_weights.output}, counted at completion.`,
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
    replicas(report, t, i),
  ];
  return { title: `Over time${suffix}`, charts };
}

interface ScaleTick {
  readonly t_s: number;
  readonly desired: number;
  readonly starting: number;
  readonly ready: number;
  readonly draining: number;
}

function replicas(report: Report, t: readonly number[], i: number): ChartSpec {
  const ticks = (report.autoscale?.timeline as readonly ScaleTick[] | undefined) ?? [];
  const series: Series[] =
    ticks.length > 0
      ? (['desired', 'starting', 'ready', 'draining'] as const).map((k) => ({
          label: k,
          dashed: k === 'desired',
          points: ticks.map((x) => [x.t_s, x[k]] as const),
        }))
      : [
          {
            label: 'ready (fixed fleet)',
            points: t.map((x) => [x, report.fleet.replicas] as const),
          },
        ];
  return {
    id: `replicas-${i}`,
    title: 'Replica groups: desired, starting, ready',
    kind: 'line',
    x: { title: 'time (s)' },
    y: { title: 'groups', min: 0 },
    series,
    note:
      ticks.length > 0
        ? `Autoscaler ${String(report.autoscale?.autoscaler)}.`
        : 'No autoscaler: the fleet is fixed.',
  };
}
