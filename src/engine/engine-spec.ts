/**
 * An engine described in plain, flag-shaped values (what `goodput simulate`, `engine` and
 * `serve` take on the command line), and the one function that turns it into an
 * `EngineConfig` and a timing profile, failing on an unknown model or GPU with the choices.
 */
import { ConfigError } from '../core/errors.ts';
import type { EngineConfig, PreemptionMode } from './engine-types.ts';
import { GPUS, MODELS } from './hardware.ts';
import { resolveProfile } from './timing/profile-registry.ts';
import type { TimingProfile } from './timing/profile.ts';

export interface EngineSpec {
  readonly model: string;
  readonly gpu: string;
  readonly tp: number;
  readonly maxNumSeqs: number;
  readonly maxBatchedTokens: number;
  readonly gpuMemoryUtilization: number;
  readonly preemption: PreemptionMode;
  readonly prefixCaching: boolean;
  /** Fixes KV capacity in 16-token blocks instead of deriving it from memory. */
  readonly kvBlocks?: number;
  /** `const:…` or a fitted profile name; default: the fitted profile of model/gpu/tp. */
  readonly profile?: string;
}

export const ENGINE_DEFAULTS: EngineSpec = {
  model: 'llama-3-8b',
  gpu: 'h100',
  tp: 1,
  maxNumSeqs: 256,
  maxBatchedTokens: 8192,
  gpuMemoryUtilization: 0.9,
  preemption: 'recompute',
  prefixCaching: true,
};

export function buildEngineConfig(spec: EngineSpec): EngineConfig {
  const model = MODELS[spec.model];
  if (model === undefined)
    throw new ConfigError('model', `one of ${Object.keys(MODELS).join(', ')}`, spec.model);
  const gpu = GPUS[spec.gpu];
  if (gpu === undefined)
    throw new ConfigError('gpu', `one of ${Object.keys(GPUS).join(', ')}`, spec.gpu);
  return {
    model,
    gpu,
    tp: spec.tp,
    maxNumSeqs: spec.maxNumSeqs,
    maxBatchedTokens: spec.maxBatchedTokens,
    blockSize: 16,
    gpuMemoryUtilization: spec.gpuMemoryUtilization,
    preemption: spec.preemption,
    enablePrefixCaching: spec.prefixCaching,
    numGpuBlocks: spec.kvBlocks,
  };
}

export function buildEngineProfile(spec: EngineSpec): TimingProfile {
  return resolveProfile({ profile: spec.profile, model: spec.model, gpu: spec.gpu, tp: spec.tp });
}
