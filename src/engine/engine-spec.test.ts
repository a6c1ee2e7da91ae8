import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isConfigError } from '../core/errors.ts';
import {
  ENGINE_DEFAULTS,
  buildEngineConfig,
  buildEngineProfile,
  type EngineSpec,
} from './engine-spec.ts';
import { HostTimedProfile } from './timing/host-overhead.ts';
import { FittedProfile } from './timing/fitted-profile.ts';
import { loadFittedProfile } from './timing/profile-registry.ts';
import { emptyShape } from './timing/profile.ts';

const spec = (over: Partial<EngineSpec>): EngineSpec => ({
  ...ENGINE_DEFAULTS,
  engineVersion: 'vllm-v1',
  ...over,
});

function configError(fn: () => unknown, field: string): void {
  assert.throws(fn, (e: unknown) => isConfigError(e) && e.message.startsWith(`${field}:`));
}

test('each engine version brings vLLM’s own defaults, per GPU and context', () => {
  const pick = (over: Partial<EngineSpec>) => {
    const c = buildEngineConfig(spec(over));
    return [c.maxNumSeqs, c.maxBatchedTokens, c.chunkedPrefill, c.schedulerSteps, c.maxModelLen];
  };
  assert.deepEqual(pick({}), [1024, 8192, true, 1, 8192]);
  assert.deepEqual(pick({ gpu: 'a100' }), [256, 2048, true, 1, 8192]);
  // 0.6: whole prompts (budget ≥ the context) for short contexts, 512-token chunks past 32K.
  assert.deepEqual(pick({ engineVersion: 'vllm-0.6' }), [256, 8192, false, 1, 8192]);
  assert.deepEqual(pick({ engineVersion: 'vllm-0.6', model: 'llama-3.1-8b' }), [
    256,
    512,
    true,
    1,
    131072,
  ]);
  assert.deepEqual(
    pick({
      engineVersion: 'vllm-0.6',
      model: 'llama-3.1-8b',
      maxModelLen: 16384,
      schedulerSteps: 10,
    }),
    [256, 16384, false, 10, 16384],
  );
  assert.deepEqual(pick({ engineVersion: 'vllm-0.4' }), [256, 8192, true, 1, 8192]);
  // Explicit flags win.
  assert.deepEqual(pick({ maxNumSeqs: 64, maxBatchedTokens: 4096 }), [64, 4096, true, 1, 8192]);
});

test('impossible engine settings are refused with the field and what would do', () => {
  configError(() => buildEngineConfig(spec({ engineVersion: 'vllm-0.3' })), 'engineVersion');
  configError(() => buildEngineConfig(spec({ maxModelLen: 9000 })), 'maxModelLen');
  configError(() => buildEngineConfig(spec({ chunkedPrefill: false })), 'chunkedPrefill');
  configError(
    () => buildEngineConfig(spec({ engineVersion: 'vllm-0.6', maxBatchedTokens: 4096 })),
    'maxBatchedTokens',
  );
  configError(() => buildEngineConfig(spec({ model: 'llama-4' })), 'model');
});

test('Llama 3.1 times like Llama 3 and serves a 128K context', () => {
  const p = buildEngineProfile(spec({ model: 'llama-3.1-8b' })) as HostTimedProfile;
  assert.equal(p.name, 'llama-3-8b/h100/tp1');
  assert.equal(buildEngineConfig(spec({ model: 'llama-3.1-70b', tp: 4 })).maxModelLen, 131072);
});

test('the host term: serial under vllm-0.4 (the profile’s own), overlapped under vllm-v1, amortised by multi-step', () => {
  const fitted = loadFittedProfile('llama-3-8b/h100/tp1');
  const decode = { ...emptyShape(), decodeSeqs: 64, decodeContextTokens: 64 * 600 };
  const prefill = {
    ...emptyShape(),
    prefillTokens: 512,
    prefillSeqs: 1,
    prefillAttnWork: 512 * 512,
  };
  const old = buildEngineProfile(spec({ engineVersion: 'vllm-0.4' }));
  // Exactly the fitted profile's own step: GPU time plus its serial CPU term.
  for (const s of [decode, prefill]) assert.equal(old.stepMs(s), fitted.stepMs(s));

  const host = { fixedMs: 4, perSeqMs: 0.05, overlap: 0 };
  const serial = new HostTimedProfile(fitted, host, 1);
  const gpu = fitted.gpuStepMs(decode);
  assert.ok(Math.abs(serial.stepMs(decode) - (gpu + 4 + 0.05 * 64)) < 1e-9);
  const hidden = new HostTimedProfile(fitted, { ...host, overlap: 1 }, 1);
  assert.equal(hidden.stepMs(decode), Math.max(gpu, 4 + 0.05 * 64));
  const multi = new HostTimedProfile(fitted, host, 8);
  assert.ok(Math.abs(multi.stepMs(decode) - (gpu + (4 + 0.05 * 64) / 8)) < 1e-9);
  // A step with a prompt is planned on its own: it pays the whole host cost.
  assert.equal(multi.stepMs(prefill), serial.stepMs(prefill));
  assert.equal(multi.stepMs(emptyShape()), 0);
  assert.ok(fitted instanceof FittedProfile);
});
