// The `openai` client retries a 429 on its own — twice by default, after the Retry-After it was
// told — and counts its retries in `x-stainless-retry-count`. The gateway takes them as the
// retries they are, without Goodput's own attempt header: counted in `goodput_retries_total`,
// each drawn from its tenant's retry budget.
import assert from 'node:assert/strict';
import test from 'node:test';
import OpenAI from 'openai';
import { MODEL, engines, gateway, metricValue, policyWith } from './gateway-kit.ts';

// One request in flight a tenant: a long stream holds the slot the retries ask for.
const ONE_AT_A_TIME = policyWith({
  tenants: { '*': { quotas: { window_ms: 60_000, max_concurrent_requests: 1 } } },
});
const MESSAGES = [{ role: 'user' as const, content: 'Tell me a long story.' }];

test("the SDK's own retries of a 429 are retries to the gateway", async () => {
  const front = await gateway(await engines(1), ONE_AT_A_TIME);
  const holder = await front.client.chat.completions.create({
    model: MODEL,
    messages: MESSAGES,
    max_tokens: 4_000,
    stream: true,
    ignore_eos: true,
  } as OpenAI.ChatCompletionCreateParamsStreaming);
  const tokens = holder[Symbol.asyncIterator]();
  await tokens.next(); // under way: it holds the slot
  const retrying = new OpenAI({ baseURL: `${front.url}/v1`, apiKey: 'none', maxRetries: 2 });
  const refused = await retrying.chat.completions
    .create({ model: MODEL, messages: MESSAGES, max_tokens: 2 })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  assert.ok(refused instanceof OpenAI.APIError, String(refused));
  assert.equal(refused.status, 429);
  assert.equal(refused.headers?.get('x-goodput-reason'), 'tenant_concurrency');
  // Three tries: the first, then two retries, each counted as one.
  assert.equal(await metricValue(front.url, 'goodput_retries_total'), 2);
  holder.controller.abort();
});
