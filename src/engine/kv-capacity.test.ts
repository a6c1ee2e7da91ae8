import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isConfigError } from '../core/errors.ts';
import type { EngineConfig } from './engine-types.ts';
import { GPUS, MODELS } from './hardware.ts';
import { gpuBlocksFromMemory, resolveCpuBlocks, resolveGpuBlocks } from './kv-capacity.ts';

function config(model: string, tp: number, over: Partial<EngineConfig> = {}): EngineConfig {
  return {
    model: MODELS[model],
    gpu: GPUS.h100,
    tp,
    maxModelLen: MODELS[model].maxModelLen,
    maxNumSeqs: 256,
    maxBatchedTokens: 8192,
    chunkedPrefill: true,
    schedulerSteps: 1,
    blockSize: 16,
    gpuMemoryUtilization: 0.9,
    preemption: 'recompute',
    enablePrefixCaching: true,
    ...over,
  };
}

test('Llama-3-8B on one H100 at 0.9 holds what vLLM reports (~400–470k tokens)', () => {
  const tokens = gpuBlocksFromMemory(config('llama-3-8b', 1)) * 16;
  assert.ok(tokens > 400_000 && tokens < 470_000, `${tokens}`);
});

test('capacity scales with the memory left after weights', () => {
  const tp4 = gpuBlocksFromMemory(config('llama-3-70b', 4)) * 16;
  // 4 × 80 GiB × 0.9 − 141 GB of weights ≈ 160 GB of KV at 320 KiB a token.
  assert.ok(tp4 > 400_000 && tp4 < 550_000, `${tp4}`);
  const lower = gpuBlocksFromMemory(config('llama-3-8b', 1, { gpuMemoryUtilization: 0.5 }));
  assert.ok(lower < gpuBlocksFromMemory(config('llama-3-8b', 1)) / 2);
});

test('weights that do not fit are a config error; explicit block counts win', () => {
  assert.throws(
    () => gpuBlocksFromMemory(config('llama-3-70b', 1)),
    (e) => isConfigError(e),
  );
  assert.equal(resolveGpuBlocks(config('llama-3-70b', 1, { numGpuBlocks: 12 })), 12);
  // vLLM's default swap space: 4 GiB per GPU, at 2 MiB per 16-token block of Llama-3-8B.
  assert.equal(resolveCpuBlocks(config('llama-3-8b', 1)), 2048);
  assert.equal(resolveCpuBlocks(config('llama-3-8b', 2)), 4096);
  assert.equal(resolveCpuBlocks(config('llama-3-8b', 1, { numCpuBlocks: 5 })), 5);
});
