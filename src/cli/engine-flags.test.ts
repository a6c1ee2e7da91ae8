import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Command } from 'commander';
import { addEngineFlags, engineSpecArgs, engineSpecFromFlags } from './engine-flags.ts';

/** `goodput engine`'s engine flags as it parses them: the spec they make. */
function specOf(args: readonly string[], policyVersion?: string) {
  const cmd = addEngineFlags(new Command()).exitOverride();
  cmd.parse(['node', 'engine', ...args]);
  return engineSpecFromFlags(cmd.opts(), policyVersion);
}

test('an engine spec given back as flags is the same spec: every flag, the defaults, the policy version', () => {
  const every = specOf([
    ...['--model', 'llama-3-8b', '--gpu', 'h100', '--tp', '1', '--profile', 'const:step_ms=10'],
    ...['--engine-version', 'vllm-v1', '--max-model-len', '4096', '--max-num-seqs', '64'],
    ...['--max-num-batched-tokens', '4096', '--enable-chunked-prefill'],
    ...['--long-prefill-token-threshold', '512', '--max-iteration-ms', '50'],
    ...['--scheduling-policy', 'priority', '--ttft-boost-ms', '100'],
    ...['--preemption-victims', 'slack', '--decode-token-budget', '128', '--tool-kv', 'keep'],
    ...['--tool-keep-ms', '2000', '--preemption', 'swap', '--no-prefix-caching'],
    ...['--kv-blocks', '5000', '--lora-modules', 'a', '--lora-modules', 'b', '--max-loras', '2'],
    ...['--lora-load-ms', '30', '--gpu-memory-utilization', '0.8', '--slowdown', '1.5'],
  ]);
  assert.deepEqual(specOf(engineSpecArgs(every)), every);
  assert.deepEqual(every.loraModules, ['a', 'b']);
  const old = specOf(['--engine-version', 'vllm-0.6', '--no-enable-chunked-prefill']);
  assert.deepEqual(specOf(engineSpecArgs(old)), old);
  // The policy's engine version, which no flag gave, is given to the engine by its flag.
  const byPolicy = specOf([], 'vllm-0.6');
  assert.deepEqual(specOf(engineSpecArgs(byPolicy)), byPolicy);
  assert.equal(byPolicy.engineVersion, 'vllm-0.6');
});
