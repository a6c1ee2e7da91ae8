/**
 * The vLLM versions the engine model can behave as: how a step is planned, the host cost around
 * it, and the defaults vLLM picks when the operator sets none — each with the vLLM file or
 * document it comes from. `--engine-version` selects one; explicit flags override its defaults.
 * The host terms are fitted to published measurements by `bench/fidelity.ts` (see
 * `bench/RESULTS.md`); the table in ./README.md lists the sources.
 */
import type { GpuSpec } from './hardware.ts';
import type { HostOverhead } from './timing/host-overhead.ts';

export interface VersionDefaults {
  readonly maxNumSeqs: number;
  readonly maxBatchedTokens: number;
}

export interface EngineVersion {
  readonly name: string;
  readonly summary: string;
  /** Whether chunked prefill is on when the operator does not say. */
  chunkedPrefillByDefault(maxModelLen: number): boolean;
  /** vLLM's defaults of max_num_seqs and max_num_batched_tokens for this setup. */
  defaults(gpu: GpuSpec, maxModelLen: number, chunkedPrefill: boolean): VersionDefaults;
  /** Scheduler steps per planned decode round when not given (`--num-scheduler-steps`). */
  readonly schedulerSteps: number;
  /** Whether it plans several decode steps at once (`--num-scheduler-steps` above 1): 0.6's alone. */
  readonly multiStep: boolean;
  /** Whether prompt blocks are cached as their KV is allocated (`EngineConfig`), not once computed. */
  readonly prefixCachedOnAllocation: boolean;
  /** 'profile': the fitted profile's own serial CPU term (Vidur's May-2024 measurement). */
  readonly host: HostOverhead | 'profile';
  readonly sources: readonly string[];
}

/** vLLM V0 without chunked prefill: a whole prompt must fit one step's budget. */
function v0Budget(maxModelLen: number, chunkedPrefill: boolean, chunkedBudget: number): number {
  return chunkedPrefill ? chunkedBudget : Math.max(maxModelLen, 2048);
}

export const ENGINE_VERSIONS: Readonly<Record<string, EngineVersion>> = {
  'vllm-v1': {
    name: 'vllm-v1',
    summary:
      'vLLM V1 engine (0.8 and later): chunked prefill always, decodes first; scheduling overlapped with the GPU',
    chunkedPrefillByDefault: () => true,
    // OpenAI API server defaults: larger on GPUs with ≥ 70 GiB that are not A100s.
    defaults: (gpu) =>
      gpu.name === 'a100'
        ? { maxNumSeqs: 256, maxBatchedTokens: 2048 }
        : { maxNumSeqs: 1024, maxBatchedTokens: 8192 },
    schedulerSteps: 1,
    multiStep: false,
    prefixCachedOnAllocation: true,
    host: { fixedMs: 4, perSeqMs: 0.02, overlap: 0.8 },
    sources: [
      'vllm/engine/arg_utils.py EngineArgs.get_batch_defaults (vllm@2a69949bd, v0.19): serve defaults 1024 seqs / 8192 tokens on ≥ 70 GiB GPUs other than A100, else 256 / 2048',
      'vllm/v1/core/sched/scheduler.py: running requests first, then waiting ones, one token budget',
      'vllm/v1/core/kv_cache_manager.py KVCacheManager.allocate_slots: blocks cached up to the tokens the step computes, as they are allocated',
    ],
  },
  'vllm-0.6': {
    name: 'vllm-0.6',
    summary:
      'vLLM 0.6 (V0 engine): prefill-first steps of whole prompts unless chunked prefill is on (default only past 32K context); multi-step decode rounds with --num-scheduler-steps',
    chunkedPrefillByDefault: (maxModelLen) => maxModelLen > 32_768,
    defaults: (_gpu, maxModelLen, chunked) => ({
      maxNumSeqs: 256,
      maxBatchedTokens: v0Budget(maxModelLen, chunked, 512),
    }),
    schedulerSteps: 1,
    multiStep: true,
    prefixCachedOnAllocation: false,
    host: { fixedMs: 6, perSeqMs: 0.06, overlap: 0 },
    sources: [
      'vllm/config.py SchedulerConfig (vllm@32e7db253, v0.6.0): max_num_seqs 256; max_num_batched_tokens max(max_model_len, 2048), 512 with chunked prefill',
      'vllm/engine/arg_utils.py (v0.6.0): chunked prefill switched on only when max_model_len > 32K',
      'vllm/core/scheduler.py _schedule_default (v0.6.0): prefill-only steps before decode-only steps',
      'vllm/core/scheduler.py Scheduler.schedule (v0.6.0): blocks marked computed once the batch is made, found by the next step, not by the same one',
      'vllm PR #7000 (multi-step scheduling, v0.6.0): --num-scheduler-steps, default 1; the v0.6.0 performance post ran 10',
    ],
  },
  'vllm-0.4': {
    name: 'vllm-0.4',
    summary:
      'the May-2024 model: chunked prefill with an 8K budget (vLLM 0.4 with --enable-chunked-prefill), host cost serial between steps',
    chunkedPrefillByDefault: () => true,
    defaults: (_gpu, maxModelLen, chunked) => ({
      maxNumSeqs: 256,
      maxBatchedTokens: v0Budget(maxModelLen, chunked, 8192),
    }),
    schedulerSteps: 1,
    multiStep: false,
    prefixCachedOnAllocation: false,
    host: 'profile',
    sources: [
      'Vidur data/profiling/a100/cpu_overheads.csv (microsoft/vidur@6555c85): the host cost, fitted in data/profiles',
      'vllm/config.py SchedulerConfig (vllm@8d8357c8e, v0.4.2): max_num_seqs 256; chunked prefill opt-in (here on, with an 8K budget, as the engine model ran before versions existed)',
    ],
  },
};

export const DEFAULT_ENGINE_VERSION = 'vllm-v1';
