/**
 * The report page of `goodput bench`: vLLM's headline numbers, then what a client can see of a
 * live system — TTFT and TPOT CDFs, goodput against offered load over time, attainment (or
 * completion) by class over offered and completed requests, outcomes by status and reason
 * over time, and each tenant's share of what was served. The server's queue and replicas are
 * not visible from here; the gateway's dashboard draws them.
 */
import { RunTimeline } from '../core/observe/run-timeline.ts';
import type { RequestOutcome } from '../core/observe/request-outcome.ts';
import type { SloClassName } from '../core/request/slo-classes.ts';
import { latencyOf, percentileKey } from '../loadgen/bench-metrics.ts';
import type { CallRecord } from '../loadgen/call-record.ts';
import { meetsSlo } from '../loadgen/goodput-spec.ts';
import type { BenchRun, BenchSpec } from '../loadgen/run-bench.ts';
import { seriesByKey, type ChartSpec, type ReportDoc } from './chart-spec.ts';
import { cdf, goodputOverTime, type Judged } from './sim-report.ts';

/** Output tokens only: what a client is served (it cannot weigh the server's prefill). */
const CLIENT_WEIGHTS = { input: 0, output: 1 };

export function benchReportDoc(spec: BenchSpec, run: BenchRun, command: string): ReportDoc {
  const timeline = new RunTimeline({ weights: CLIENT_WEIGHTS });
  const byClass = new Map<string, { offered: number; completed: number; good: number }>();
  for (const r of run.records) {
    const l = latencyOf(r);
    const good =
      l !== null &&
      (spec.slo === undefined || meetsSlo(spec.slo, l.ttftMs, l.tpotMs ?? 0, l.e2elMs));
    timeline.count(r.dueMs - run.startMs, outcomeKey(r), true);
    timeline.outcome(asOutcome(r), r.endMs - run.startMs, good);
    const c = byClass.get(r.sloClass) ?? { offered: 0, completed: 0, good: 0 };
    c.offered++;
    if (l !== null) c.completed++;
    if (good) c.good++;
    byClass.set(r.sloClass, c);
  }
  const data = timeline.data();
  const m = run.metrics as Record<string, number | null>;
  const f = (k: string, digits = 1) =>
    m[k] === null || m[k] === undefined ? '—' : (m[k] as number).toFixed(digits);
  const classes = [...byClass.keys()].sort();
  const judged = spec.slo === undefined ? 'completed' : 'good';
  const attainment: ChartSpec = {
    id: 'attainment-class',
    title:
      spec.slo === undefined ? 'Completed by class' : 'Attainment by class, offered and completed',
    kind: 'bar',
    x: { title: 'class', categories: classes },
    y: { title: `${judged} fraction`, min: 0, max: 1 },
    // Completed over completed would be 1 everywhere: without an SLO, over offered alone.
    series: (spec.slo === undefined
      ? (['offered'] as const)
      : (['offered', 'completed'] as const)
    ).map((d) => ({
      label: `${judged} / ${d}`,
      points: classes.map((c, i) => {
        const x = byClass.get(c) as { offered: number; completed: number; good: number };
        return [
          i,
          x[d] > 0 ? (spec.slo === undefined ? x.completed : x.good) / x[d] : null,
        ] as const;
      }),
    })),
  };
  // The tail the run asked for: its highest percentile (vLLM's --metric-percentiles, default 99).
  const tail = spec.percentiles.length === 0 ? 99 : Math.max(...spec.percentiles);
  const tailName = percentileKey(tail);
  return {
    title: `Goodput bench — ${run.model} at ${spec.baseUrl}`,
    subtitle: `${command}\nseed ${spec.seed} · ${run.offered} requests offered · ${f('duration', 1)} s`,
    headline: {
      columns: [
        'completed',
        'failed',
        'req/s',
        'goodput req/s',
        'output tok/s',
        `TTFT median / ${tailName} ms`,
        `TPOT median / ${tailName} ms`,
        `ITL median / ${tailName} ms`,
        `E2EL median / ${tailName} ms`,
      ],
      rows: [
        [
          f('completed', 0),
          f('failed', 0),
          f('request_throughput', 2),
          f('request_goodput', 2),
          f('output_throughput', 0),
          // Latencies are of completed requests: with none, nothing was measured.
          ...['ttft', 'tpot', 'itl', 'e2el'].map((x) =>
            m.completed === 0 ? '—' : `${f(`median_${x}_ms`)} / ${pOrDash(m, tailName, x)}`,
          ),
        ],
      ],
    },
    sections: [
      {
        title: 'Latency',
        charts: [
          cdf('ttft-cdf', 'TTFT distribution', [{ label: run.model, cdf: data.ttft_cdf }]),
          cdf('tpot-cdf', 'TPOT distribution', [{ label: run.model, cdf: data.tpot_cdf }]),
        ],
      },
      {
        title: 'Goodput and attainment',
        charts: [
          goodputOverTime([{ label: run.model, timeline: data }], judgedBy(spec)),
          attainment,
        ],
      },
      {
        title: 'Over time',
        charts: [
          {
            id: 'outcomes-0',
            title: 'Outcomes by status and reason',
            kind: 'area',
            x: { title: 'time sent (s)' },
            y: { title: 'requests per bucket', min: 0 },
            series: seriesByKey(data.t_s, data.outcomes),
          },
          {
            id: 'tenant-share-0',
            title: 'Output tokens by tenant',
            kind: 'area',
            x: { title: 'time (s)' },
            y: { title: 'share of output tokens', min: 0, max: 1 },
            series: seriesByKey(data.t_s, data.tenant_share),
          },
        ],
      },
    ],
  };
}

function pOrDash(m: Record<string, number | null>, tail: string, name: string): string {
  const v = m[`${tail}_${name}_ms`];
  return typeof v === 'number' ? v.toFixed(1) : '—';
}

function outcomeKey(r: CallRecord): string {
  if (r.ok) return 'ok';
  return r.status === 0 ? `transport:${r.reason ?? 'error'}` : `${r.status}:${r.reason ?? 'error'}`;
}

function asOutcome(r: CallRecord): RequestOutcome {
  const l = latencyOf(r);
  return {
    id: r.id,
    tenant: r.tenant,
    sloClass: r.sloClass as SloClassName,
    state: l === null ? 'failed' : 'completed',
    admitted: r.ok,
    inputTokens: r.promptTokens,
    outputTokens: r.outputTokens,
    cachedTokens: 0,
    ...(l === null ? {} : { ttftMs: l.ttftMs, e2eMs: l.e2elMs }),
    attempts: 1,
    preemptions: 0,
  };
}

/**
 * Good as a bench judges it: by `--goodput`'s objectives, which a client measures alone; with
 * none, every completed request, named so.
 */
function judgedBy(spec: BenchSpec): Judged {
  return spec.slo === undefined
    ? {
        name: 'completed',
        means: 'answered whole (no --goodput objectives given)',
        title: 'Completed against offered load',
      }
    : {
        name: 'good',
        means: "completed within --goodput's objectives",
        title: 'Goodput against offered load',
      };
}
