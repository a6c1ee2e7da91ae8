/**
 * Renders reports as aligned plain-text tables: one column per report, so `simulate` shows
 * one and `compare` shows several side by side. Offered and admitted denominators sit next to
 * each other so shedding is never mistaken for success.
 */
import type { Report } from '../core/observe/report.ts';

type Row = [label: string, value: (r: Report) => string];

const n = (x: number) => x.toLocaleString('en-US');
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const ms = (x: number) => (x >= 1_000 ? `${(x / 1000).toFixed(2)} s` : `${x.toFixed(1)} ms`);
const num = (x: number, d = 2) => x.toFixed(d);
/** A latency's p50 / p99; a dash where nothing was measured (no TPOT when every reply is one token). */
const p50p99 = (d: { p50: number; p99: number; count: number }) =>
  d.count === 0 ? '— / —' : `${ms(d.p50)} / ${ms(d.p99)}`;

function topReason(reasons: Record<string, number>): string {
  let best = '—';
  let count = 0;
  for (const [reason, c] of Object.entries(reasons)) {
    if (c > count) [best, count] = [reason, c];
  }
  return count > 0 ? `${best} (${n(count)})` : best;
}

const ROWS: Row[] = [
  ['policy', (r) => r.policy],
  ['simulated time', (r) => `${num(r.duration_s, 1)} s`],
  ['offered requests', (r) => n(r.offered.requests)],
  ['admitted / rejected', (r) => `${n(r.admission.admitted)} / ${n(r.admission.rejected)}`],
  [
    'deferred / degraded / expired',
    (r) =>
      `${n(r.admission.deferred)} / ${n(r.admission.degraded)} / ` +
      n(r.admission.expired_after_admission + r.admission.deferred_expired),
  ],
  ['top reject reason', (r) => topReason(r.admission.reject_reasons)],
  [
    'completed / failed / cancelled',
    (r) => `${n(r.completed)} / ${n(r.failed)} / ${n(r.cancelled)}`,
  ],
  ['SLO attainment (offered)', (r) => pct(r.slo.attainment_offered)],
  ['SLO attainment (admitted)', (r) => pct(r.slo.attainment_admitted)],
  ['goodput (req/s)', (r) => num(r.goodput.requests_per_s, 3)],
  ['goodput (tok/s)', (r) => num(r.goodput.tokens_per_s, 1)],
  ['throughput (req/s)', (r) => num(r.throughput.requests_per_s, 3)],
  ['TTFT p50 / p99', (r) => p50p99(r.latency_ms.ttft)],
  ['  queue p50 / p99', (r) => p50p99(r.latency_ms.ttft_parts.queue)],
  ['TPOT p50 / p99', (r) => p50p99(r.latency_ms.tpot)],
  ['ITL p50 / p99', (r) => p50p99(r.latency_ms.itl)],
  ['E2E p50 / p99', (r) => p50p99(r.latency_ms.e2el)],
  ['preemptions', (r) => n(r.engine.preemptions)],
  ['prefix hit rate', (r) => pct(r.engine.prefix_hit_rate)],
  [
    'GPU-seconds per good request',
    (r) =>
      r.cost.gpu_seconds_per_good_request === null
        ? '—'
        : num(r.cost.gpu_seconds_per_good_request, 3),
  ],
  ['retry amplification', (r) => num(r.client.retry_amplification, 3)],
  ['sim wall / speed-up', (r) => `${n(r.sim.wall_ms)} ms / ${n(r.sim.speedup)}×`],
];

export function summaryTable(reports: readonly Report[]): string {
  const cells = ROWS.map(([label, value]) => [label, ...reports.map(value)]);
  const classRows = new Set(reports.flatMap((r) => Object.keys(r.slo.by_class)));
  for (const c of classRows) {
    cells.push([
      `  ${c} attainment off./adm.`,
      ...reports.map((r) => {
        const b = (
          r.slo.by_class as Record<
            string,
            { attainment_offered: number; attainment_admitted: number }
          >
        )[c];
        return b === undefined
          ? '—'
          : `${pct(b.attainment_offered)} / ${pct(b.attainment_admitted)}`;
      }),
    ]);
  }
  const widths = cells[0].map((_, col) => Math.max(...cells.map((row) => row[col].length)));
  return cells
    .map((row) =>
      row
        .map((cell, col) => (col === 0 ? cell.padEnd(widths[col]) : cell.padStart(widths[col])))
        .join('  '),
    )
    .join('\n');
}
