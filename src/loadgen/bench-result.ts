/**
 * The JSON a benchmark writes, laid out as `vllm bench serve --save-result` lays out its own:
 * the run's settings (`date`, `endpoint_type`, `model_id`, `num_prompts`, `request_rate`,
 * `burstiness`, `max_concurrency`), then the metrics, then — with `--save-detailed` — the
 * per-request lists (`input_lens`, `output_lens`, `ttfts` and `itls` in seconds, `errors`).
 * Goodput adds what it needs to repeat the run (`seed`, the workload) and to find a request in
 * the server's logs (`request_ids`). An infinite rate is written `"inf"`: JSON has no Infinity.
 */
import { latencyOf } from './bench-metrics.ts';
import { formatGoodputSpec } from './goodput-spec.ts';
import type { BenchRun, BenchSpec } from './run-bench.ts';

export function benchResult(
  spec: BenchSpec,
  run: BenchRun,
  opts: { date: string; label?: string; detailed: boolean },
): Record<string, unknown> {
  const w = spec.workload;
  const synthetic = w.trace === undefined;
  const result: Record<string, unknown> = {
    date: opts.date,
    endpoint_type: spec.endpoint === 'chat' ? 'openai-chat' : 'openai',
    label: opts.label ?? null,
    model_id: run.model,
    tokenizer_id: null,
    num_prompts: run.offered,
    request_rate: synthetic ? rateValue((w.rate ?? 0) * (w.rateScale ?? 1)) : null,
    burstiness: synthetic ? (w.burstiness ?? 1) : null,
    max_concurrency: spec.maxConcurrency ?? null,
    // Goodput's own: the choices asked of each request (`n`).
    n: spec.workload.choices ?? 1,
    goodput: spec.slo === undefined ? null : formatGoodputSpec(spec.slo),
    seed: spec.seed,
    workload: run.workload.describe,
    ...run.metrics,
  };
  if (!opts.detailed) return result;
  const ordered = [...run.records].sort((a, b) => a.dueMs - b.dueMs || (a.id < b.id ? -1 : 1));
  return {
    ...result,
    request_ids: ordered.map((r) => r.serverId ?? null),
    input_lens: ordered.map((r) => r.promptTokens),
    output_lens: ordered.map((r) => (r.ok ? r.outputTokens : 0)),
    ttfts: ordered.map((r) => (latencyOf(r)?.ttftMs ?? 0) / 1000),
    itls: ordered.map((r) => (latencyOf(r)?.gapsMs ?? []).map((g) => g / 1000)),
    errors: ordered.map((r) => (r.ok ? '' : `${r.status} ${r.reason ?? ''}: ${r.error ?? ''}`)),
  };
}

function rateValue(rps: number): number | string {
  return Number.isFinite(rps) ? rps : 'inf';
}
