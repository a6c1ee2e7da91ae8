import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forwardedData, promptUsage } from './upstream-chunk.ts';
import { TokenShapes } from './token-chunk-shape.ts';

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

test('a chunk forwarded names the tier the client named, and drops the usage it did not ask for', () => {
  const chunk = (more: object = {}) => ({
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'm',
    choices: [{ index: 0, delta: { content: 'hi' }, logprobs: null, finish_reason: null }],
    ...more,
  });
  const data = (c: object) => JSON.stringify(c);
  const usageNull = chunk({ usage: null });
  // As it came, byte for byte, where nothing is to change.
  assert.equal(forwardedData(chunk(), data(chunk()), false), data(chunk()));
  assert.equal(forwardedData(usageNull, data(usageNull), true), data(usageNull));
  assert.equal(forwardedData(usageNull, data(usageNull), false), data(chunk()));
  // The tier after the model, as OpenAI writes it; the usage asked for kept.
  const named = JSON.parse(forwardedData(usageNull, data(usageNull), true, 'flex')) as object;
  assert.deepEqual(Object.keys(named), [
    'id',
    'object',
    'created',
    'model',
    'service_tier',
    'choices',
    'usage',
  ]);
  assert.deepEqual(named, { ...usageNull, service_tier: 'flex' });
  const unasked = forwardedData(usageNull, data(usageNull), false, 'flex');
  assert.deepEqual(JSON.parse(unasked), { ...chunk(), service_tier: 'flex' });
  // A server's own tier is said over; left as it said where the client named none.
  const theirs = chunk({ service_tier: 'default' });
  assert.equal(
    JSON.parse(forwardedData(theirs, data(theirs), false, 'priority')).service_tier,
    'priority',
  );
  assert.equal(forwardedData(theirs, data(theirs), false), data(theirs));

  // Learnt from, the next chunks go out in the same form, read by their bytes.
  const shapes = new TokenShapes('content');
  shapes.learn(data(usageNull), { text: 'hi' }, unasked);
  const next = chunk({
    usage: null,
    choices: [{ index: 0, delta: { content: ' "you"' }, logprobs: null, finish_reason: null }],
  });
  const out = shapes.readFrame(Buffer.from(`data: ${data(next)}\n\n`));
  assert.equal(out?.text, ' "you"');
  const sent = Buffer.from(out?.sse ?? []).toString();
  assert.equal(sent, `data: ${forwardedData(next, data(next), false, 'flex')}\n\n`);
});
