/** The terminal summary of a benchmark, in the layout `vllm bench serve` prints. */
import { METRIC_NAMES, percentileKey, type BenchMetrics } from '../loadgen/bench-metrics.ts';

const TITLES = {
  ttft: 'Time to First Token',
  tpot: 'Time per Output Token (excl. 1st token)',
  itl: 'Inter-token Latency',
  e2el: 'End-to-end Latency',
} as const;

export function benchTable(
  m: BenchMetrics,
  settings: { rate: number | null; maxConcurrency?: number; percentiles: readonly number[] },
): string {
  const lines: string[] = [banner(' Serving Benchmark Result ', '=')];
  const row = (name: string, value: number | string) =>
    lines.push(`${name.padEnd(40)} ${typeof value === 'number' ? fmt(value) : value}`);
  const n = (key: string) => m[key] as number;
  row('Successful requests:', String(n('completed')));
  row('Failed requests:', String(n('failed')));
  if (settings.maxConcurrency !== undefined)
    row('Maximum request concurrency:', String(settings.maxConcurrency));
  if (settings.rate !== null && Number.isFinite(settings.rate))
    row('Request rate configured (RPS):', settings.rate);
  row('Benchmark duration (s):', n('duration'));
  row('Total input tokens:', String(n('total_input_tokens')));
  row('Total generated tokens:', String(n('total_output_tokens')));
  row('Request throughput (req/s):', n('request_throughput'));
  if (m.request_goodput !== null) {
    row('Request goodput (req/s):', n('request_goodput'));
    row('SLO attainment, offered:', `${(n('attainment_offered') * 100).toFixed(2)}%`);
  }
  row('Output token throughput (tok/s):', n('output_throughput'));
  row('Peak output token throughput (tok/s):', n('max_output_tokens_per_s'));
  row('Peak concurrent requests:', n('max_concurrent_requests'));
  row('Total Token throughput (tok/s):', n('total_token_throughput'));
  for (const name of METRIC_NAMES) {
    lines.push(banner(TITLES[name], '-'));
    const upper = name.toUpperCase();
    row(`Mean ${upper} (ms):`, n(`mean_${name}_ms`));
    row(`Median ${upper} (ms):`, n(`median_${name}_ms`));
    for (const q of settings.percentiles)
      row(`P${percentileKey(q).slice(1)} ${upper} (ms):`, n(`${percentileKey(q)}_${name}_ms`));
  }
  const reasons = Object.entries(m.failed_by_reason as Record<string, number>);
  if (reasons.length > 0) {
    lines.push(banner('Failures', '-'));
    for (const [reason, count] of reasons.sort((a, b) => b[1] - a[1]))
      row(`${reason}:`, String(count));
  }
  lines.push(banner('Load generator', '-'));
  row('Send lag p99 / max (ms):', `${fmt(n('p99_send_lag_ms'))} / ${fmt(n('max_send_lag_ms'))}`);
  lines.push('='.repeat(50));
  return lines.join('\n');
}

function banner(title: string, fill: string): string {
  const left = Math.floor((50 - title.length) / 2);
  return (
    fill.repeat(Math.max(0, left)) + title + fill.repeat(Math.max(0, 50 - left - title.length))
  );
}

function fmt(v: number): string {
  return v.toFixed(2);
}
