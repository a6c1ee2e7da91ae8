/**
 * An engine described in plain, flag-shaped values (what `goodput simulate`, `engine` and
 * `serve` take on the command line), and the one function that turns it into an
 * `EngineConfig` and a timing profile, failing on an unknown model, GPU or engine version with
 * the choices. Limits left unset take the engine version's defaults, as vLLM does.
 */
import { ConfigError } from '../core/errors.ts';
import type { EngineConfig, PreemptionMode, ToolKvMode } from './engine-types.ts';
import { DEFAULT_ENGINE_VERSION, ENGINE_VERSIONS, type EngineVersion } from './engine-versions.ts';
import { GPUS, MODELS, type GpuSpec, type ModelSpec } from './hardware.ts';
import { resolveGpuBlocks } from './kv-capacity.ts';
import { HostTimedProfile, type HostOverhead } from './timing/host-overhead.ts';
import { FittedProfile } from './timing/fitted-profile.ts';
import { resolveProfile } from './timing/profile-registry.ts';
import type { TimingProfile } from './timing/profile.ts';

export interface EngineSpec {
  readonly model: string;
  readonly gpu: string;
  readonly tp: number;
  /** Which vLLM the replicas behave as (`ENGINE_VERSIONS`). */
  readonly engineVersion: string;
  /** Default: the model's context. */
  readonly maxModelLen?: number;
  /** Default: the engine version's. */
  readonly maxNumSeqs?: number;
  /** Default: the engine version's. */
  readonly maxBatchedTokens?: number;
  /** Default: the engine version's (V1: on; 0.6: on past a 32K context). */
  readonly chunkedPrefill?: boolean;
  /** vLLM 0.6's --num-scheduler-steps; default: the engine version's. */
  readonly schedulerSteps?: number;
  /** vLLM V1's --long-prefill-token-threshold: one sequence's prompt tokens per step. */
  readonly longPrefillTokenThreshold?: number;
  /** Goodput's iteration-time cap: a step's prefill cut to keep it within this many ms. */
  readonly maxIterationMs?: number;
  /** vLLM's --scheduling-policy: fcfs (default) or priority (requests' priority, then arrival). */
  readonly schedulingPolicy?: 'fcfs' | 'priority';
  /** Goodput's TTFT boost under priority scheduling: within this many ms of its first-token deadline, a waiting request goes first. */
  readonly ttftBoostMs?: number;
  /** Goodput's preemption victims: newest (vLLM, default) or slack (`victims.ts`). */
  readonly preemptionVictims?: 'newest' | 'slack';
  /** Goodput's per-iteration decode token budget: the most decodes one step carries. */
  readonly decodeTokenBudget?: number;
  /** KV of a sequence paused for a tool call: auto (default), keep, swap or drop. */
  readonly toolKv?: ToolKvMode;
  /** Under toolKv auto, the expected tool wait up to which KV is kept (ms). */
  readonly toolKeepMs?: number;
  readonly gpuMemoryUtilization: number;
  readonly preemption: PreemptionMode;
  readonly prefixCaching: boolean;
  /** Fixes KV capacity in 16-token blocks instead of deriving it from memory. */
  readonly kvBlocks?: number;
  /** vLLM's --lora-modules (names), --max-loras, and an adapter's load time (Goodput's model). */
  readonly loraModules?: readonly string[];
  readonly maxLoras?: number;
  readonly loraLoadMs?: number;
  /** `const:…` or a fitted profile name; default: the fitted profile of model/gpu/tp. */
  readonly profile?: string;
  /** Replaces the engine version's host term (what-ifs, and fitting it to measurements). */
  readonly hostOverhead?: HostOverhead;
  /**
   * Replaces a fitted profile's compute calibration, which otherwise applies to the engine
   * versions it was measured with (what-ifs, and deriving it).
   */
  readonly computeScale?: number;
  /**
   * The replicas take this many times the step time of their profile, and the control plane is
   * not told (a slower clock, a busy host: what-ifs of a mis-profiled fleet). 1 when unset.
   */
  readonly slowdown?: number;
}

/** Time to bring a LoRA adapter into a GPU slot, unless configured (Goodput's model). */
export const DEFAULT_LORA_LOAD_MS = 30;

export const ENGINE_DEFAULTS: EngineSpec = {
  model: 'llama-3-8b',
  gpu: 'h100',
  tp: 1,
  engineVersion: DEFAULT_ENGINE_VERSION,
  gpuMemoryUtilization: 0.9,
  preemption: 'recompute',
  prefixCaching: true,
};

function choose<T>(table: Readonly<Record<string, T>>, field: string, name: string): T {
  const found = table[name];
  if (found === undefined)
    throw new ConfigError(field, `one of ${Object.keys(table).join(', ')}`, name);
  return found;
}

export function engineVersion(spec: EngineSpec): EngineVersion {
  return choose(ENGINE_VERSIONS, 'engineVersion', spec.engineVersion);
}

export function buildEngineConfig(spec: EngineSpec): EngineConfig {
  const model: ModelSpec = choose(MODELS, 'model', spec.model);
  const gpu: GpuSpec = choose(GPUS, 'gpu', spec.gpu);
  const version = engineVersion(spec);
  const maxModelLen = spec.maxModelLen ?? model.maxModelLen;
  if (!(Number.isInteger(maxModelLen) && maxModelLen >= 2 && maxModelLen <= model.maxModelLen)) {
    throw new ConfigError(
      'maxModelLen',
      `an integer in [2, ${model.maxModelLen}] (${model.name}'s context)`,
      maxModelLen,
    );
  }
  const chunkedPrefill = spec.chunkedPrefill ?? version.chunkedPrefillByDefault(maxModelLen);
  if (!chunkedPrefill && version.name === 'vllm-v1') {
    throw new ConfigError(
      'chunkedPrefill',
      'true: the vllm-v1 engine model always chunks prefills',
      false,
    );
  }
  if (spec.ttftBoostMs !== undefined && spec.schedulingPolicy !== 'priority') {
    throw new ConfigError(
      'ttftBoostMs',
      'unset unless the scheduling policy is priority',
      spec.ttftBoostMs,
    );
  }
  const defaults = version.defaults(gpu, maxModelLen, chunkedPrefill);
  const maxBatchedTokens = spec.maxBatchedTokens ?? defaults.maxBatchedTokens;
  if (!chunkedPrefill && maxBatchedTokens < maxModelLen) {
    // vLLM refuses this too: without chunking, a prompt must fit in one step.
    throw new ConfigError(
      'maxBatchedTokens',
      `≥ the max model length (${maxModelLen}) when chunked prefill is off`,
      maxBatchedTokens,
    );
  }
  for (const [field, value] of [
    ['longPrefillTokenThreshold', spec.longPrefillTokenThreshold],
    ['maxIterationMs', spec.maxIterationMs],
  ] as const) {
    if (value !== undefined && !chunkedPrefill) {
      throw new ConfigError(field, 'unset when chunked prefill is off (it limits chunks)', value);
    }
  }
  if ((spec.schedulerSteps ?? 1) > 1 && !version.multiStep) {
    const only = `1 under ${version.name} (multi-step scheduling is vLLM 0.6's: --engine-version vllm-0.6)`;
    throw new ConfigError('schedulerSteps', only, spec.schedulerSteps);
  }
  const config: EngineConfig = {
    model,
    gpu,
    tp: spec.tp,
    maxModelLen,
    maxNumSeqs: spec.maxNumSeqs ?? defaults.maxNumSeqs,
    maxBatchedTokens,
    chunkedPrefill,
    schedulerSteps: spec.schedulerSteps ?? version.schedulerSteps,
    ...(spec.longPrefillTokenThreshold === undefined
      ? {}
      : { longPrefillTokenThreshold: spec.longPrefillTokenThreshold }),
    ...(spec.maxIterationMs === undefined ? {} : { maxIterationMs: spec.maxIterationMs }),
    ...(spec.schedulingPolicy === undefined ? {} : { schedulingPolicy: spec.schedulingPolicy }),
    ...(spec.ttftBoostMs === undefined ? {} : { ttftBoostMs: spec.ttftBoostMs }),
    ...(spec.preemptionVictims === undefined ? {} : { preemptionVictims: spec.preemptionVictims }),
    ...(spec.decodeTokenBudget === undefined ? {} : { decodeTokenBudget: spec.decodeTokenBudget }),
    ...(spec.toolKv === undefined ? {} : { toolKv: spec.toolKv }),
    ...(spec.toolKeepMs === undefined ? {} : { toolKeepMs: spec.toolKeepMs }),
    blockSize: 16,
    gpuMemoryUtilization: spec.gpuMemoryUtilization,
    preemption: spec.preemption,
    enablePrefixCaching: spec.prefixCaching,
    prefixCachedOnAllocation: version.prefixCachedOnAllocation,
    numGpuBlocks: spec.kvBlocks,
    ...(spec.loraModules === undefined || spec.loraModules.length === 0
      ? {}
      : {
          loraModules: spec.loraModules,
          maxLoras: spec.maxLoras ?? 1,
          loraLoadMs: spec.loraLoadMs ?? DEFAULT_LORA_LOAD_MS,
        }),
  };
  holdsOneSequence(config);
  return config;
}

/**
 * vLLM refuses to start an engine whose KV cache cannot hold one sequence of its max model
 * length ("To serve at least one request with the model's max seq len …"): a replica that
 * started would refuse requests by the length it happened to sample. So does this one, naming
 * what to change and the context the cache does hold.
 */
function holdsOneSequence(config: EngineConfig): void {
  const tokens = resolveGpuBlocks(config) * config.blockSize;
  if (tokens >= config.maxModelLen) return;
  const given = config.numGpuBlocks;
  throw new ConfigError(
    given === undefined ? 'gpuMemoryUtilization' : 'kvBlocks',
    `a KV cache of at least one sequence of the max model length, ${config.maxModelLen} tokens (this one holds ${tokens}: a larger cache, or a max model length ≤ ${tokens})`,
    given ?? config.gpuMemoryUtilization,
  );
}

/**
 * The step time replicas of this spec run with: a fitted profile's GPU time plus the engine
 * version's host cost (see `HostTimedProfile`); a `const:` profile as it is.
 */
export function buildEngineProfile(spec: EngineSpec): TimingProfile {
  const planned = plannedProfile(spec);
  const f = spec.slowdown ?? 1;
  return f === 1 ? planned : slowed(planned, f);
}

/**
 * The step time the control plane plans with for replicas of this spec: their profile, without
 * the slowdown it is not told of (the replicas' own when there is none).
 */
export function plannedProfile(spec: EngineSpec): TimingProfile {
  const model = choose(MODELS, 'model', spec.model);
  const base = resolveProfile({
    profile: spec.profile,
    model: model.timingAs ?? model.name,
    gpu: spec.gpu,
    tp: spec.tp,
  });
  if (!(base instanceof FittedProfile)) return base;
  const version = engineVersion(spec);
  const calibration = base.data.computeScale;
  const gpu = base.withComputeScale(
    spec.computeScale ??
      (calibration?.engineVersions.includes(version.name) === true ? calibration.value : 1),
  );
  const host =
    spec.hostOverhead ??
    (version.host === 'profile'
      ? {
          fixedMs: base.data.cpuOverhead.fixedMs,
          perSeqMs: base.data.cpuOverhead.perSeqMs,
          overlap: 0,
        }
      : version.host);
  return new HostTimedProfile(gpu, host, spec.schedulerSteps ?? version.schedulerSteps);
}

/** `profile` with every step `factor` times as long. */
function slowed(profile: TimingProfile, factor: number): TimingProfile {
  return {
    name: `${profile.name} ×${factor}`,
    stepMs: (shape) => factor * profile.stepMs(shape),
  };
}
