import { test } from 'node:test';
import assert from 'node:assert/strict';
import { promptUsage } from './upstream-chunk.ts';

test("a backend's usage: its prompt count, and its prefix-cache hits only when it gives them", () => {
  const details = (cached: unknown) => ({ prompt_tokens: 10, prompt_tokens_details: cached });
  assert.deepEqual(promptUsage(details({ cached_tokens: 8 }) as never), {
    promptTokens: 10,
    cachedTokens: 8,
  });
  // vLLM without --enable-prompt-tokens-details sends null: nothing is known, not 0.
  assert.deepEqual(promptUsage(details(null) as never), { promptTokens: 10 });
  assert.deepEqual(promptUsage(details({ cached_tokens: -1 }) as never), { promptTokens: 10 });
  assert.deepEqual(promptUsage({ completion_tokens: 3 }), { promptTokens: 0 });
  assert.deepEqual(promptUsage(null), { promptTokens: 0 });
});
