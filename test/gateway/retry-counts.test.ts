// A retry is counted as one wherever it is refused: one turned away at the shared-state door —
// its tenant's one slot held by a long stream — is in `goodput_retries_total` as much as one
// admission judged. The official `openai` client's own retries (its `x-stainless-retry-count`)
// are retries too, with no header of Goodput's.
import assert from 'node:assert/strict';
import test from 'node:test';
import OpenAI from 'openai';
import { MODEL, engines, gateway, metricValue, policyWith, postChat } from './gateway-kit.ts';

const ONE_AT_A_TIME = policyWith({
  tenants: { '*': { quotas: { window_ms: 60_000, max_concurrent_requests: 1 } } },
});

test('a retry refused at the door is counted as a retry', async () => {
  const front = await gateway(await engines(1), ONE_AT_A_TIME);
  const holder = await front.client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'Tell me a long story.' }],
    max_tokens: 4_000,
    stream: true,
  });
  await holder[Symbol.asyncIterator]().next(); // under way: it holds the slot
  const retry = await postChat(front.url, { max_tokens: 2 }, { 'x-goodput-attempt': '2' });
  assert.equal(retry.status, 429);
  assert.equal(retry.headers.get('x-goodput-reason'), 'tenant_concurrency');
  assert.equal(await metricValue(front.url, 'goodput_retries_total'), 1);
  const first = await postChat(front.url, { max_tokens: 2 });
  assert.equal(first.status, 429);
  assert.equal(await metricValue(front.url, 'goodput_retries_total'), 1, 'a first attempt is none');
  holder.controller.abort();
});

test("the openai client's automatic retries are counted as retries", async () => {
  const front = await gateway(await engines(1), ONE_AT_A_TIME);
  // vLLM's ignore_eos (not in the OpenAI types): it holds the slot for all its 4,000 tokens.
  const long = { model: MODEL, messages: [{ role: 'user' as const, content: 'A story.' }] };
  const holder = await front.client.chat.completions.create({
    ...long,
    max_tokens: 4_000,
    stream: true,
    ...{ ignore_eos: true },
  });
  await holder[Symbol.asyncIterator]().next(); // under way: it holds the slot
  // Two retries, each after the 429's Retry-After (1 s), then the SDK gives up.
  const client = new OpenAI({ baseURL: `${front.url}/v1`, apiKey: 'none', maxRetries: 2 });
  await assert.rejects(
    client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }),
    (e: unknown) => (e as { status?: number }).status === 429,
  );
  assert.equal(await metricValue(front.url, 'goodput_retries_total'), 2);
  holder.controller.abort();
});

test('a retry refused before its body is read is counted too, and its record says its attempt', async () => {
  const admin = 'retry-admin';
  const front = await gateway(await engines(1), 'goodput', { adminToken: admin });
  // A deadline no request can make: refused from its headers, its body never read.
  const retry = await postChat(
    front.url,
    { max_tokens: 2 },
    { 'x-goodput-timeout-ms': '1', 'x-stainless-retry-count': '2' },
  );
  await retry.text();
  assert.equal(retry.headers.get('x-goodput-reason'), 'deadline_exceeded');
  assert.equal(await metricValue(front.url, 'goodput_retries_total'), 1);
  const id = retry.headers.get('x-goodput-request-id') ?? '';
  const looked = await fetch(`${front.url}/admin/decisions/${id}`, {
    headers: { authorization: `Bearer ${admin}` },
  });
  const record = (await looked.json()) as { attempt?: number; asked: { input_tokens: null } };
  assert.equal(record.attempt, 3);
  assert.equal(record.asked.input_tokens, null, 'unread');
});
