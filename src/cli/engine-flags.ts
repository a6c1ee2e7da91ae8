/**
 * The engine flags `simulate`, `compare`, `engine` and `serve` share — vLLM's names and
 * defaults — and their translation into an `EngineSpec`. Each value is validated as parsed.
 */
import type { Command } from 'commander';
import { ENGINE_DEFAULTS as D, type EngineSpec } from '../engine/engine-spec.ts';
import { GPUS, MODELS } from '../engine/hardware.ts';
import { fraction, oneOf, positiveInt } from './parse-flags.ts';

export function addEngineFlags(cmd: Command): Command {
  return cmd
    .option('--model <name>', `model: ${Object.keys(MODELS).join(' | ')}`, D.model)
    .option('--gpu <name>', `GPU type: ${Object.keys(GPUS).join(' | ')}`, D.gpu)
    .option('--tp <n>', 'tensor-parallel GPUs per replica', positiveInt('--tp'), D.tp)
    .option(
      '--profile <name>',
      'timing profile: MODEL/GPU/tpN, or const:step_ms=10, or const:prefill_ms_per_token=X,decode_step_ms=Y (default: fitted for model/gpu/tp)',
    )
    .option(
      '--max-num-seqs <n>',
      "engine's max running sequences (vLLM max_num_seqs)",
      positiveInt('--max-num-seqs'),
      D.maxNumSeqs,
    )
    .option(
      '--max-batched-tokens <n>',
      "engine's token budget per step (vLLM max_num_batched_tokens)",
      positiveInt('--max-batched-tokens'),
      D.maxBatchedTokens,
    )
    .option(
      '--preemption <mode>',
      'recompute | swap',
      oneOf('--preemption', ['recompute', 'swap'] as const),
      D.preemption,
    )
    .option('--no-prefix-caching', 'disable the engine prefix cache')
    .option(
      '--kv-blocks <n>',
      'fix KV capacity per replica in 16-token blocks instead of deriving it from memory',
      positiveInt('--kv-blocks'),
    )
    .option(
      '--gpu-memory-utilization <f>',
      'fraction of GPU memory for the engine',
      fraction('--gpu-memory-utilization'),
      D.gpuMemoryUtilization,
    );
}

export function engineSpecFromFlags(o: Record<string, unknown>): EngineSpec {
  return {
    model: o.model as string,
    gpu: o.gpu as string,
    tp: o.tp as number,
    profile: o.profile as string | undefined,
    maxNumSeqs: o.maxNumSeqs as number,
    maxBatchedTokens: o.maxBatchedTokens as number,
    preemption: o.preemption as EngineSpec['preemption'],
    prefixCaching: o.prefixCaching as boolean,
    kvBlocks: o.kvBlocks as number | undefined,
    gpuMemoryUtilization: o.gpuMemoryUtilization as number,
  };
}
