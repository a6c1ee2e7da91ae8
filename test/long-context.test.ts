// Long-context replay: Mooncake-style prompts up to 126K tokens run on a 128K-context model and
// fail, named, where the context does not reach.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { run } from './helpers.ts';

const trace = 'test/fixtures/traces/mooncake-long.jsonl';

test('prompts of up to 126K tokens replay on Llama 3.1; an 8K or 32K context fails them by name', () => {
  const long = run({ trace, model: 'llama-3.1-8b' });
  assert.equal(long.completed, 4);
  assert.equal(long.failed, 0);
  // A 126K-token prompt takes many 8,192-token chunks: its TTFT is seconds, not a step.
  assert.ok(long.latency_ms.ttft.max > 5_000, `${long.latency_ms.ttft.max}`);

  const short = run({ trace, model: 'llama-3-8b' });
  assert.equal(short.completed, 1);
  assert.equal(short.fail_reasons.prompt_exceeds_max_model_len, 3);

  const capped = run({ trace, model: 'llama-3.1-8b', maxModelLen: 32_768 });
  assert.equal(capped.completed, 2);
  assert.equal(capped.fail_reasons.prompt_exceeds_max_model_len, 2);
  assert.equal(capped.scenario.maxModelLen, 32_768);
});

test('the 70B model with a 128K context fits its KV on four H100s and replays the same trace', () => {
  const r = run({ trace, model: 'llama-3.1-70b', tp: 4 });
  assert.equal(r.completed, 4);
  assert.equal(r.scenario.profile, 'llama-3-70b/h100/tp4');
});
