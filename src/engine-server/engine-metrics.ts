/**
 * The engine server's Prometheus metrics under vLLM's names, so a gateway, autoscaler or
 * dashboard built for vLLM reads the simulator unchanged. Gauges and counters are read from the
 * backend at scrape time; histograms observe each request as it runs (vLLM's buckets), and a
 * finished one's phases (queued, prefill, decode, running) and token counts as it ends. Main
 * rule: a registry of its own (never prom-client's global one), every series labelled with
 * `model_name` (but the info gauges `vllm:cache_config_info` and `vllm:lora_requests_info`,
 * whose labels are the engine's configuration and adapters, as vLLM's are), and label values
 * only from closed sets (finished_reason: stop, length, abort; adapter names from the engine's
 * own --lora-modules).
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type {
  BackendObserver,
  EndReason,
  EndedRequest,
  SimulatedBackend,
} from './simulated-backend.ts';
import { resolveCpuBlocks } from '../engine/kv-capacity.ts';

const TTFT_BUCKETS = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80,
  160, 640, 2560,
];
const ITL_BUCKETS = [
  0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80,
];
const E2E_BUCKETS = [
  0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680,
];
const END_REASONS: readonly EndReason[] = ['stop', 'length', 'abort'];

/** vLLM's `build_1_2_5_buckets`: 1, 2, 5, 10, 20, 50, … up to `max`. */
function oneTwoFive(max: number): number[] {
  const out: number[] = [];
  for (let exp = 1; ; exp *= 10) {
    for (const m of [1, 2, 5]) {
      if (m * exp > max) return out;
      out.push(m * exp);
    }
  }
}
const CACHE_CONFIG_LABELS = [
  'block_size',
  'num_gpu_blocks',
  'num_cpu_blocks',
  'enable_prefix_caching',
  'gpu_memory_utilization',
] as const;

export class EngineMetrics implements BackendObserver {
  readonly registry = new Registry();
  private readonly labels: { model_name: string };
  private readonly ttft: Histogram<'model_name'>;
  private readonly itl: Histogram<'model_name'>[];
  private readonly e2e: Histogram<'model_name'>;
  /** vLLM's request-level histograms: its phases in seconds, its tokens. */
  private readonly phases: Record<
    'queueMs' | 'prefillMs' | 'decodeMs' | 'inferenceMs',
    Histogram<'model_name'>
  >;
  private readonly tokens: Record<'promptTokens' | 'generationTokens', Histogram<'model_name'>>;

  /**
   * `maxModelLen`: the top of the token histograms' buckets, as vLLM's; `originUnixMs`: Unix
   * time at the backend clock's 0, for the readings vLLM stamps with the time.
   */
  constructor(
    modelName: string,
    backend: () => SimulatedBackend,
    maxModelLen: number,
    originUnixMs: number,
  ) {
    const labels = { model_name: modelName };
    this.labels = labels;
    const registers = [this.registry];
    const gauge = (name: string, help: string, read: (b: SimulatedBackend) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['model_name'],
        registers,
        collect() {
          this.set(labels, read(backend()));
        },
      });
    const counter = (name: string, help: string, read: (b: SimulatedBackend) => number) =>
      new Counter({
        name,
        help,
        labelNames: ['model_name'],
        registers,
        collect() {
          this.reset();
          this.inc(labels, read(backend()));
        },
      });
    const kvUsage = (b: SimulatedBackend) => {
      const l = b.load();
      return l.kvTotalBlocks > 0 ? l.kvUsedBlocks / l.kvTotalBlocks : 0;
    };
    gauge(
      'vllm:num_requests_running',
      'Requests in model execution batches.',
      (b) => b.load().running,
    );
    gauge(
      'vllm:num_requests_waiting',
      'Requests waiting to be processed.',
      (b) => b.load().waiting,
    );
    gauge('vllm:gpu_cache_usage_perc', 'GPU KV-cache usage (1 = 100%).', kvUsage);
    gauge('vllm:kv_cache_usage_perc', 'KV-cache usage (1 = 100%).', kvUsage);
    counter(
      'vllm:prefix_cache_queries_total',
      'Prefix cache queries, in tokens.',
      (b) => b.stats().promptTokens,
    );
    counter(
      'vllm:prefix_cache_hits_total',
      'Prefix cache hits, in tokens.',
      (b) => b.stats().prefixHitTokens,
    );
    counter('vllm:num_preemptions_total', 'Cumulative preemptions.', (b) => b.stats().preemptions);
    // vLLM's LoRA info gauge: the adapters in GPU slots and those waited for, comma-separated
    // (names from the engine's own --lora-modules), its value the Unix time of the reading.
    new Gauge({
      name: 'vllm:lora_requests_info',
      help: 'Running stats on lora requests.',
      labelNames: ['running_lora_adapters', 'waiting_lora_adapters', 'max_lora'],
      registers,
      collect() {
        this.reset();
        const info = backend().loraInfo();
        if (info === null) return;
        this.set(
          {
            running_lora_adapters: info.running.join(','),
            waiting_lora_adapters: info.waiting.join(','),
            max_lora: String(info.maxLoras),
          },
          (originUnixMs + backend().clock.now()) / 1000,
        );
      },
    });
    // vLLM's info gauge of its KV cache: 1, its configuration in the labels (routers read the
    // block size, and how many blocks a replica's prefix cache can hold).
    new Gauge({
      name: 'vllm:cache_config_info',
      help: 'Information of the LLMEngine CacheConfig.',
      labelNames: [...CACHE_CONFIG_LABELS],
      registers,
      collect() {
        const b = backend();
        const c = b.config;
        this.reset();
        this.set(
          {
            block_size: String(c.blockSize),
            num_gpu_blocks: String(b.load().kvTotalBlocks),
            num_cpu_blocks: String(resolveCpuBlocks(c)),
            enable_prefix_caching: String(c.enablePrefixCaching),
            gpu_memory_utilization: String(c.gpuMemoryUtilization),
          },
          1,
        );
      },
    });
    counter(
      'vllm:prompt_tokens_total',
      'Prefill tokens processed.',
      (b) => b.counters().promptTokens,
    );
    counter(
      'vllm:generation_tokens_total',
      'Generation tokens processed.',
      (b) => b.stats().tokensGenerated,
    );
    new Counter({
      name: 'vllm:request_success_total',
      help: 'Finished requests, by finished_reason.',
      labelNames: ['model_name', 'finished_reason'],
      registers,
      collect() {
        this.reset();
        const ended = backend().counters().ended;
        for (const r of END_REASONS) this.inc({ ...labels, finished_reason: r }, ended[r]);
      },
    });
    const histogram = (name: string, help: string, buckets: number[]) =>
      new Histogram({ name, help, buckets, labelNames: ['model_name'], registers });
    this.ttft = histogram('vllm:time_to_first_token_seconds', 'Time to first token.', TTFT_BUCKETS);
    this.itl = [
      histogram('vllm:inter_token_latency_seconds', 'Inter-token latency.', ITL_BUCKETS),
      histogram('vllm:time_per_output_token_seconds', 'Time per output token.', ITL_BUCKETS),
    ];
    this.e2e = histogram('vllm:e2e_request_latency_seconds', 'End-to-end latency.', E2E_BUCKETS);
    const phase = (name: string, what: string) =>
      histogram(`vllm:request_${name}_time_seconds`, `Time spent in ${what} phase.`, E2E_BUCKETS);
    this.phases = {
      queueMs: phase('queue', 'WAITING'),
      prefillMs: phase('prefill', 'PREFILL'),
      decodeMs: phase('decode', 'DECODE'),
      inferenceMs: phase('inference', 'RUNNING'),
    };
    const tokenBuckets = oneTwoFive(maxModelLen);
    this.tokens = {
      promptTokens: histogram('vllm:request_prompt_tokens', 'Prefill tokens.', tokenBuckets),
      generationTokens: histogram(
        'vllm:request_generation_tokens',
        'Generation tokens.',
        tokenBuckets,
      ),
    };
  }

  firstToken(ttftMs: number): void {
    this.ttft.observe(this.labels, ttftMs / 1000);
  }

  tokenGap(itlMs: number): void {
    for (const h of this.itl) h.observe(this.labels, itlMs / 1000);
  }

  /** A finished request's latencies and sizes, as vLLM records them: not an aborted one's. */
  ended(reason: EndReason, r: EndedRequest): void {
    if (reason === 'abort') return;
    this.e2e.observe(this.labels, r.e2eMs / 1000);
    for (const [field, h] of Object.entries(this.phases)) {
      const ms = r[field as keyof typeof this.phases];
      if (ms !== undefined) h.observe(this.labels, ms / 1000);
    }
    for (const [field, h] of Object.entries(this.tokens)) {
      h.observe(this.labels, r[field as keyof typeof this.tokens]);
    }
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ body: string; contentType: string }> {
    return { body: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}
