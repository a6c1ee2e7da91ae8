// vLLM's own request fields through `goodput serve` to a `goodput engine` over real HTTP, sent
// by the official `openai` client as a vLLM user sends them (extra body fields), and vLLM's
// cache_salt as routing sees it: prompts share cached blocks only under the same salt.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MODEL, engines, gateway } from './gateway-kit.ts';

const ADMIN = 'vllm-extras-admin';
const backends = await engines(1);
const gw = await gateway(backends, 'goodput', { adminToken: ADMIN });

/** vLLM's extras, which the `openai` types do not know. */
const EXTRAS = {
  ignore_eos: true,
  stop_token_ids: [128001, 128009],
  include_stop_str_in_output: false,
  skip_special_tokens: false,
  spaces_between_special_tokens: true,
  bad_words: ['darn'],
  length_penalty: 1,
};

test("vLLM's decoding and chat-template fields reach the engine, streamed and whole", async () => {
  // A variable, not a literal: the `openai` types take extra fields the way its users send them.
  const params = {
    model: MODEL,
    messages: [
      { role: 'user' as const, content: 'Name a prime.' },
      { role: 'assistant' as const, content: 'Seven is' },
    ],
    max_tokens: 6,
    stream: true as const,
    ...EXTRAS,
    add_generation_prompt: false,
    continue_final_message: true,
    chat_template_kwargs: { enable_thinking: false },
  };
  let tokens = 0;
  for await (const chunk of await gw.client.chat.completions.create(params))
    if (chunk.choices[0]?.delta?.content) tokens++;
  assert.equal(tokens, 6);
  const text = {
    model: MODEL,
    prompt: [1, 2, 3, 4],
    max_tokens: 3,
    ...EXTRAS,
    allowed_token_ids: [7, 8, 9],
    add_special_tokens: true,
  };
  const whole = await gw.client.completions.create(text);
  assert.equal(whole.usage?.completion_tokens, 3);
});

test('a bad vLLM field is a 400 naming it, from the gateway, before any backend is asked', async () => {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: MODEL,
      messages: [{ role: 'user', content: 'x' }],
      cache_salt: '',
    }),
  });
  assert.equal(res.status, 400);
  const body = (await res.json()) as { error: { message: string; param: string } };
  assert.equal(body.error.message, 'cache_salt: expected a non-empty string, got ""');
  assert.equal(body.error.param, 'cache_salt');
});

/** The prompt tokens admission expected the backend's cache to hold, from the decision record. */
async function prefixHit(salt: string | undefined): Promise<number> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: MODEL,
      messages: [{ role: 'user', content: 'Summarise the incident report below. '.repeat(60) }],
      max_tokens: 1,
      ...(salt === undefined ? {} : { cache_salt: salt }),
    }),
  });
  assert.equal(res.status, 200);
  await res.arrayBuffer();
  const id = res.headers.get('x-goodput-request-id');
  const record = await fetch(`${gw.url}/admin/decisions/${id}`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  assert.equal(record.status, 200);
  return ((await record.json()) as { demand: { prefix_hit_tokens: number } }).demand
    .prefix_hit_tokens;
}

test('cache_salt: a prompt is matched against cached blocks of its own salt only', async () => {
  assert.equal(await prefixHit('tenant-a'), 0, 'the first of its salt');
  assert.ok((await prefixHit('tenant-a')) > 500, 'the same prompt and salt: cached');
  assert.equal(await prefixHit('tenant-b'), 0, 'another salt shares nothing');
  assert.equal(await prefixHit(undefined), 0, 'nor does no salt');
  assert.ok((await prefixHit(undefined)) > 500, 'unsalted prompts share among themselves');
});
