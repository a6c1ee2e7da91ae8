/**
 * Reads a backend's Prometheus exposition into the load the gateway routes and admits on,
 * understanding vLLM's names (`vllm:num_requests_running`, `vllm:num_requests_waiting`,
 * `vllm:kv_cache_usage_perc` or the older `vllm:gpu_cache_usage_perc`, prefix-cache queries and
 * hits, preemptions), SGLang's (`sglang:num_running_reqs`, `sglang:num_queue_reqs`,
 * `sglang:token_usage`), TGI's (`tgi_batch_current_size`, `tgi_queue_size`; it tells no KV
 * usage) and llama.cpp's (`llamacpp:requests_processing`, `llamacpp:requests_deferred`, and
 * `llamacpp:kv_cache_usage_ratio` where its build still exports it; `llama-server --metrics`).
 * Counts are summed over label sets (one server may report per model, or per data-parallel
 * engine: vLLM's `engine` label); KV usage, a share, is their mean.
 * The LoRA adapters resident in its GPU slots come from `vllm:lora_requests_info`'s
 * `running_lora_adapters` label, in its latest sample (the value is the time of the reading),
 * and how many one batch may run from its `max_lora`.
 * The KV cache it holds, in tokens: vLLM's `vllm:cache_config_info` (`num_gpu_blocks` ×
 * `block_size` in its labels, summed over data-parallel engines) or SGLang's
 * `sglang:max_total_num_tokens` — the figure its own scheduler admits against, which the
 * gateway's estimate from the engine flags only approaches.
 * A scrape missing the running and waiting gauges, or with counts below 0, is not a load at all:
 * undefined. Beside it, `adaptersListed` reads the adapters its `/v1/models` lists.
 */
import type { Ms } from '../core/request/units.ts';
import type { BackendLoad } from './backend.ts';

const NAMES = {
  running: [
    'vllm:num_requests_running',
    'sglang:num_running_reqs',
    'tgi_batch_current_size',
    'llamacpp:requests_processing',
  ],
  waiting: [
    'vllm:num_requests_waiting',
    'sglang:num_queue_reqs',
    'tgi_queue_size',
    'llamacpp:requests_deferred',
  ],
  kvUsage: [
    'vllm:kv_cache_usage_perc',
    'vllm:gpu_cache_usage_perc',
    'sglang:token_usage',
    'llamacpp:kv_cache_usage_ratio',
  ],
  // vLLM 0.8's V1 named them gpu_prefix_cache_*; 0.9 and 0.10 export both, later only the new.
  prefixQueries: [
    'vllm:prefix_cache_queries_total',
    'vllm:prefix_cache_queries',
    'vllm:gpu_prefix_cache_queries_total',
    'vllm:gpu_prefix_cache_queries',
  ],
  prefixHits: [
    'vllm:prefix_cache_hits_total',
    'vllm:prefix_cache_hits',
    'vllm:gpu_prefix_cache_hits_total',
    'vllm:gpu_prefix_cache_hits',
  ],
  preemptions: ['vllm:num_preemptions_total', 'vllm:num_preemptions'],
} as const;

/** Per metric name (labels dropped), the sum of its samples and how many there are. */
export function parseExposition(text: string): Map<string, { sum: number; series: number }> {
  const sums = new Map<string, { sum: number; series: number }>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const nameEnd = line.search(/[{\s]/);
    if (nameEnd <= 0) continue;
    const name = line.slice(0, nameEnd);
    const afterLabels = line.charAt(nameEnd) === '{' ? labelsEnd(line, nameEnd) : nameEnd;
    if (afterLabels < 0) continue;
    const value = Number(line.slice(afterLabels).trim().split(/\s+/)[0]);
    if (!Number.isFinite(value)) continue;
    const seen = sums.get(name);
    sums.set(name, { sum: (seen?.sum ?? 0) + value, series: (seen?.series ?? 0) + 1 });
  }
  return sums;
}

/** A backend's load before its figures are known: not ready, its KV taken as full. */
export function unscrapedLoad(atMs: Ms): BackendLoad {
  return { ready: false, running: 0, waiting: 0, kvUsage: 1, atMs };
}

/** Index just past the `}` closing the label set opened at `open`, quotes respected; −1 if none. */
function labelsEnd(line: string, open: number): number {
  let quoted = false;
  for (let i = open + 1; i < line.length; i++) {
    const c = line.charAt(i);
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === '}') return i + 1;
  }
  return -1;
}

/** The first of `names` exported: its samples' sum, or (`mean`) their mean. */
function first(
  samples: Map<string, { sum: number; series: number }>,
  names: readonly string[],
  mean = false,
): number | undefined {
  for (const n of names) {
    const v = samples.get(n);
    if (v !== undefined) return mean ? v.sum / v.series : v.sum;
  }
  return undefined;
}

function isCount(n: number | undefined): n is number {
  return n !== undefined && Number.isFinite(n) && n >= 0;
}

export function loadFromExposition(text: string, atMs: Ms): BackendLoad | undefined {
  const sums = parseExposition(text);
  const running = first(sums, NAMES.running);
  const waiting = first(sums, NAMES.waiting);
  // Counts that are no counts (a broken exporter) are no load either.
  if (!isCount(running) || !isCount(waiting)) return undefined;
  const queries = first(sums, NAMES.prefixQueries);
  const hits = first(sums, NAMES.prefixHits);
  return {
    ready: true,
    running,
    waiting,
    // A share, not a count: data-parallel engines (vLLM's `engine` label) are averaged, as
    // vLLM's own log line averages them, not summed past 1.
    kvUsage: Math.min(1, Math.max(0, first(sums, NAMES.kvUsage, true) ?? 0)),
    prefixHitRate:
      queries !== undefined && hits !== undefined && queries > 0 ? hits / queries : undefined,
    preemptions: first(sums, NAMES.preemptions),
    ...kvCapacityField(text, sums),
    ...loraField(text),
    atMs,
  };
}

/**
 * `{ kvCapacityTokens }`: the tokens its KV cache holds, where it says, else nothing. vLLM says
 * it in the labels of an info gauge: blocks (`num_gpu_blocks`, "None" before its cache is
 * sized) of `block_size` tokens each.
 */
function kvCapacityField(
  text: string,
  sums: Map<string, { sum: number; series: number }>,
): { kvCapacityTokens?: number } {
  let tokens = 0;
  for (const m of text.matchAll(/^vllm:cache_config_info\{([^}]*)\}/gm)) {
    const blocks = Number(labelOf(m[1], 'num_gpu_blocks'));
    const size = Number(labelOf(m[1], 'block_size'));
    if (!isWhole(blocks) || !isWhole(size)) return {};
    tokens += blocks * size;
  }
  if (tokens === 0) tokens = sums.get('sglang:max_total_num_tokens')?.sum ?? 0;
  return isWhole(tokens) ? { kvCapacityTokens: tokens } : {};
}

/** The value of label `name` in a sample's label set (the text between its braces). */
function labelOf(labels: string, name: string): string | undefined {
  return new RegExp(`(?:^|,)${name}="([^"]*)"`).exec(labels)?.[1];
}

function isWhole(n: number): boolean {
  return Number.isSafeInteger(n) && n > 0;
}

/**
 * `{ loras, maxLoras }` from the latest `vllm:lora_requests_info` sample (its
 * `running_lora_adapters` and `max_lora` labels), or nothing without one.
 */
function loraField(text: string): { loras?: readonly string[]; maxLoras?: number } {
  let latest = -Infinity;
  let labels: string | undefined;
  for (const m of text.matchAll(/^vllm:lora_requests_info\{([^}]*)\}\s+(\S+)/gm)) {
    const at = Number(m[2]);
    if (/running_lora_adapters="/.test(m[1]) && at >= latest) {
      latest = at;
      labels = m[1];
    }
  }
  if (labels === undefined) return {};
  const running = labelOf(labels, 'running_lora_adapters') ?? '';
  const max = Number(labelOf(labels, 'max_lora'));
  return {
    loras: running === '' ? [] : running.split(','),
    ...(Number.isInteger(max) && max >= 1 ? { maxLoras: max } : {}),
  };
}

/**
 * The LoRA adapters a `/v1/models` answer lists: vLLM lists each as a model whose `parent` is
 * the base model, and the base model with `parent: null`. Undefined when the answer is not such
 * a list: not a list at all, or one whose entries carry no `parent` (a server that does not
 * list adapters this way says nothing of them, and is taken to serve every one).
 */
export function adaptersListed(body: unknown): string[] | undefined {
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return undefined;
  const out: string[] = [];
  let speaksOfParents = false;
  for (const m of data as ({ id?: unknown; parent?: unknown } | null)[]) {
    if (m === null || typeof m !== 'object' || !('parent' in m)) continue;
    speaksOfParents = true;
    if (typeof m.id === 'string' && typeof m.parent === 'string') out.push(m.id);
  }
  return speaksOfParents ? out : undefined;
}

/** What a server's `/v1/models` lists: every model's id, and the base model's context, if said. */
export interface ModelListing {
  readonly ids: readonly string[];
  /** vLLM's `max_model_len` of the first model without a parent (its base model). */
  readonly maxModelLen?: number;
}

/** A `/v1/models` answer as a listing; undefined when it is no list. */
export function modelListing(body: unknown): ModelListing | undefined {
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return undefined;
  const entries = (data as unknown[]).filter(
    (m): m is { id: string; parent?: unknown; max_model_len?: unknown } =>
      m !== null && typeof m === 'object' && typeof (m as { id?: unknown }).id === 'string',
  );
  const base = entries.find((m) => m.parent === undefined || m.parent === null);
  const len = base?.max_model_len;
  const ids = entries.map((m) => m.id);
  return typeof len === 'number' && Number.isInteger(len) && len > 0
    ? { ids, maxModelLen: len }
    : { ids };
}
