/**
 * A benchmark's numbers from its call records, defined and named as `vllm bench serve` defines
 * and names them, so tools that read its JSON read this one: over completed requests, TTFT, TPOT
 * = (E2E − TTFT)/(output tokens − 1) for answers longer than one token, ITL pooled over every
 * gap, E2E; `mean_`, `median_`, `std_` (population) and `p{q}_` keys in ms; throughputs over the
 * run's duration; `request_goodput` when an SLO was given. Goodput's additions keep names of
 * their own: attainment over offered and over completed requests, failures by status and by
 * reason, and the generator's own send lag (how late it sent what was due: large means the
 * client, not the server, set the pace).
 */
import { mean, percentileSorted } from '../core/stats/percentile.ts';
import type { CallRecord } from './call-record.ts';
import { meetsSlo, type GoodputSlo } from './goodput-spec.ts';

export interface BenchMetricsInput {
  readonly records: readonly CallRecord[];
  readonly startMs: number;
  readonly endMs: number;
  /** Requests the run offered: sent (an interrupted run sends fewer than its workload has). */
  readonly offered: number;
  readonly slo?: GoodputSlo;
  /** Percentiles to report, e.g. [99] (vLLM's `--metric-percentiles`, default 99). */
  readonly percentiles: readonly number[];
}

export type MetricName = 'ttft' | 'tpot' | 'itl' | 'e2el';
export const METRIC_NAMES: readonly MetricName[] = ['ttft', 'tpot', 'itl', 'e2el'];

/** Each completed request's latencies, ms. */
export interface RequestLatency {
  readonly ttftMs: number;
  readonly tpotMs: number | null;
  readonly e2elMs: number;
  readonly gapsMs: readonly number[];
}

/**
 * A request's latencies. Of several choices (`tokenChoices`), each choice is a stream of its
 * own: a gap is between two chunks of one choice, and TPOT is over the longest choice's tokens.
 */
export function latencyOf(r: CallRecord): RequestLatency | null {
  const times = r.tokenTimesMs;
  if (!r.ok || times.length === 0) return null;
  const choices = r.tokenChoices;
  const gapsMs: number[] = [];
  // Each choice's last chunk time, and its chunks.
  const lastOf = new Map<number, number>();
  const countOf = new Map<number, number>();
  for (let i = 0; i < times.length; i++) {
    const c = choices?.[i] ?? 0;
    const before = lastOf.get(c);
    if (before !== undefined) gapsMs.push(times[i] - before);
    lastOf.set(c, times[i]);
    countOf.set(c, (countOf.get(c) ?? 0) + 1);
  }
  const ttftMs = times[0] - r.sentMs;
  const e2elMs = times[times.length - 1] - r.sentMs;
  const tokens = choices === undefined ? r.outputTokens : Math.max(...countOf.values());
  const tpotMs = tokens > 1 ? (e2elMs - ttftMs) / (tokens - 1) : null;
  return { ttftMs, tpotMs, e2elMs, gapsMs };
}

export type BenchMetrics = Record<string, number | null | Record<string, number>>;

export function benchMetrics(input: BenchMetricsInput): BenchMetrics {
  const { records, slo } = input;
  const durationS = Math.max(1e-9, (input.endMs - input.startMs) / 1000);
  const series: Record<MetricName, number[]> = { ttft: [], tpot: [], itl: [], e2el: [] };
  const byStatus: Record<string, number> = {};
  const byReason: Record<string, number> = {};
  const lag: number[] = [];
  let completed = 0;
  let good = 0;
  let inputTokens = 0;
  let outputTokens = 0;

  for (const r of records) {
    lag.push(Math.max(0, r.sentMs - r.dueMs));
    const l = latencyOf(r);
    if (l === null) {
      const status = String(r.status);
      const reason = r.reason ?? (r.ok ? 'no_tokens' : 'unknown');
      byStatus[status] = (byStatus[status] ?? 0) + 1;
      byReason[reason] = (byReason[reason] ?? 0) + 1;
      continue;
    }
    completed++;
    inputTokens += r.promptTokens;
    outputTokens += r.outputTokens;
    series.ttft.push(l.ttftMs);
    series.e2el.push(l.e2elMs);
    if (l.tpotMs !== null) series.tpot.push(l.tpotMs);
    for (const g of l.gapsMs) series.itl.push(g);
    if (slo !== undefined && meetsSlo(slo, l.ttftMs, l.tpotMs ?? 0, l.e2elMs)) good++;
  }

  const out: BenchMetrics = {
    duration: durationS,
    completed,
    failed: records.length - completed,
    total_input_tokens: inputTokens,
    total_output_tokens: outputTokens,
    request_throughput: completed / durationS,
    request_goodput: slo === undefined ? null : good / durationS,
    output_throughput: outputTokens / durationS,
    total_token_throughput: (inputTokens + outputTokens) / durationS,
    ...peaks(records, input.startMs),
  };
  for (const name of METRIC_NAMES) Object.assign(out, stats(name, series[name], input.percentiles));
  const lagSorted = Float64Array.from(lag).sort();
  return {
    ...out,
    attainment_offered: slo === undefined ? null : good / Math.max(1, input.offered),
    attainment_completed: slo === undefined ? null : good / Math.max(1, completed),
    failed_by_status: byStatus,
    failed_by_reason: byReason,
    mean_send_lag_ms: lag.length ? mean(lagSorted) : 0,
    p99_send_lag_ms: lag.length ? percentileSorted(lagSorted, 99) : 0,
    max_send_lag_ms: lag.length ? lagSorted[lagSorted.length - 1] : 0,
  };
}

/** vLLM's key for a percentile: `p99`, `p99.9`. */
export function percentileKey(q: number): string {
  return `p${Number.isInteger(q) ? q.toFixed(0) : String(q)}`;
}

function stats(name: MetricName, values: number[], percentiles: readonly number[]): BenchMetrics {
  const sorted = Float64Array.from(values).sort();
  const m = sorted.length ? mean(sorted) : 0;
  let variance = 0;
  for (const v of sorted) variance += (v - m) ** 2;
  const out: BenchMetrics = {
    [`mean_${name}_ms`]: m,
    [`median_${name}_ms`]: sorted.length ? percentileSorted(sorted, 50) : 0,
    [`std_${name}_ms`]: sorted.length ? Math.sqrt(variance / sorted.length) : 0,
  };
  for (const q of percentiles)
    out[`${percentileKey(q)}_${name}_ms`] = sorted.length ? percentileSorted(sorted, q) : 0;
  return out;
}

/** The busiest second's output tokens and the most requests in flight in any second, as vLLM counts them. */
function peaks(records: readonly CallRecord[], startMs: number): BenchMetrics {
  const tokens: number[] = [];
  const active: number[] = [];
  const second = (t: number) => Math.max(0, Math.floor((t - startMs) / 1000));
  for (const r of records) {
    for (const t of r.tokenTimesMs) tokens[second(t)] = (tokens[second(t)] ?? 0) + 1;
    for (let s = second(r.sentMs); s <= second(r.endMs); s++) active[s] = (active[s] ?? 0) + 1;
  }
  const max = (xs: number[]) => xs.reduce((a, b) => Math.max(a, b ?? 0), 0);
  return { max_output_tokens_per_s: max(tokens), max_concurrent_requests: max(active) };
}
