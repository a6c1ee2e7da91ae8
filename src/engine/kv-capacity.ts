/**
 * How many KV blocks a replica holds, derived from memory the way vLLM sizes its cache: what
 * the engine may use (tp × GPU memory × utilisation) minus the weights minus a reserve for
 * what the profiling run finds in use besides them, divided by the bytes of one block.
 */
import { ConfigError } from '../core/errors.ts';
import type { Bytes } from '../core/request/units.ts';
import type { EngineConfig } from './engine-types.ts';
import { kvBytesPerToken, weightBytes } from './hardware.ts';

const GiB = 1024 ** 3;

/**
 * Per GPU, independent of load: CUDA context, cuBLAS/NCCL workspaces, CUDA graphs and other
 * non-torch allocations. vLLM's startup logs on H100 show roughly 0.5–1.5 GiB of these.
 */
export const RUNTIME_RESERVE_BYTES_PER_GPU: Bytes = 1 * GiB;

/** vLLM's default `swap_space`: host memory per GPU set aside for swapped-out KV. */
export const DEFAULT_SWAP_SPACE_BYTES_PER_GPU: Bytes = 4 * GiB;

/**
 * Peak activations of vLLM's profiling forward pass (a full batch of `maxBatchedTokens`), per
 * GPU: the MLP's gate and up projections dominate (2 × ffn / tp per token), plus a few
 * hidden-sized buffers (residual, norm output, attention output, q/k/v), plus fp32 logits for
 * up to `maxNumSeqs` sampled rows.
 */
export function activationReserveBytes(config: EngineConfig): Bytes {
  const m = config.model;
  const perToken = ((2 * m.ffn) / config.tp + 4 * m.hidden) * m.dtypeBytes;
  return config.maxBatchedTokens * perToken + config.maxNumSeqs * m.vocab * 4;
}

export function blockBytes(config: EngineConfig): Bytes {
  return config.blockSize * kvBytesPerToken(config.model);
}

/** Blocks that fit in the memory left for KV; throws a ConfigError when the weights alone do not fit. */
export function gpuBlocksFromMemory(config: EngineConfig): number {
  const usable = config.tp * config.gpu.memoryBytes * config.gpuMemoryUtilization;
  const reserve = config.tp * (RUNTIME_RESERVE_BYTES_PER_GPU + activationReserveBytes(config));
  const forKv = usable - weightBytes(config.model) - reserve;
  const blocks = Math.floor(forKv / blockBytes(config));
  if (blocks < 1) {
    throw new ConfigError(
      'gpuMemoryUtilization',
      `a value leaving room for KV after ${config.model.name} weights on ${config.tp}× ${config.gpu.name}`,
      config.gpuMemoryUtilization,
    );
  }
  return blocks;
}

export function resolveGpuBlocks(config: EngineConfig): number {
  return config.numGpuBlocks ?? gpuBlocksFromMemory(config);
}

/** Host blocks for swap-mode preemption: `numCpuBlocks`, else vLLM's 4 GiB per GPU. */
export function resolveCpuBlocks(config: EngineConfig): number {
  if (config.numCpuBlocks !== undefined) return config.numCpuBlocks;
  return Math.floor((config.tp * DEFAULT_SWAP_SPACE_BYTES_PER_GPU) / blockBytes(config));
}
