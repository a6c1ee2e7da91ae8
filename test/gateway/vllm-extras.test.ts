// vLLM's own request fields through `goodput serve` to a `goodput engine` over real HTTP, sent
// by the official `openai` client as a vLLM user sends them (extra body fields); vLLM's
// cache_salt as routing sees it (prompts share cached blocks only under the same salt); vLLM's
// truncate_prompt_tokens, which the gateway and the engine size a prompt by alike;
// response_format and vLLM's structured_outputs and guided_* constraints, and a logit bias,
// passed to a server and refused where only simulated engines would answer;
// a reasoning model's thinking, relayed in the field its server streamed it in, and its
// reasoning effort, passed on; and vLLM's request priority, which the gateway sets from the
// class where engines schedule by it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generationRequest } from '../../src/gateway/embedded-backend.ts';
import { streamCall } from '../../src/loadgen/stream-call.ts';
import { wallClock } from '../../src/runtime/wall-clock.ts';
import { wallTimers } from '../../src/runtime/wall-timers.ts';
import { MODEL, decisionRecord, doorOnlyFleet, engines, gateway } from './gateway-kit.ts';
import { fakeVllm } from './fake-vllm.ts';
import { describeValue } from '../../src/openai/index.ts';

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

/** POSTs `body` as JSON to `url`'s `path` (a chat completion unless told). */
function post(
  url: string,
  body: object,
  headers: Record<string, string> = {},
  path = '/v1/chat/completions',
): Promise<Response> {
  return fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

/** A one-message chat, with `extra` fields. */
const chat = (extra: object = {}) => ({
  model: MODEL,
  messages: [{ role: 'user', content: 'x' }],
  ...extra,
});

test('a bad vLLM field is a 400 naming it, from the gateway, before any backend is asked', async () => {
  const res = await post(gw.url, chat({ cache_salt: '' }));
  assert.equal(res.status, 400);
  const body = (await res.json()) as { error: { message: string; param: string } };
  assert.equal(body.error.message, 'cache_salt: expected a non-empty string, got ""');
  assert.equal(body.error.param, 'cache_salt');
});

/** The prompt tokens admission expected the backend's cache to hold, from the decision record. */
async function prefixHit(salt: string | undefined): Promise<number> {
  const res = await post(gw.url, {
    model: MODEL,
    messages: [{ role: 'user', content: 'Summarise the incident report below. '.repeat(60) }],
    max_tokens: 1,
    ...(salt === undefined ? {} : { cache_salt: salt }),
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

const WEATHER = {
  type: 'json_schema' as const,
  json_schema: {
    name: 'weather',
    schema: { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] },
    strict: true,
  },
};

/** Each way to hold a reply to JSON: OpenAI's, vLLM's, vLLM's older. */
const HELD = [
  { response_format: { type: 'json_object' } },
  { response_format: WEATHER },
  { structured_outputs: { json: WEATHER.json_schema.schema } },
  { guided_json: WEATHER.json_schema.schema },
] as const;

test('a constraint on the reply reaches a server as sent, and its JSON reply comes back whole', async () => {
  const vllm = await fakeVllm();
  const front = await gateway([vllm]);
  for (const held of HELD) {
    // A variable, not a literal: the `openai` types take vLLM's fields the way its users send them.
    const params = {
      model: MODEL,
      messages: [{ role: 'user' as const, content: 'The weather as JSON.' }],
      ...held,
    };
    const r = await front.client.chat.completions.create(params);
    assert.deepEqual(JSON.parse(r.choices[0].message.content ?? ''), { a: 1 });
    const [field, value] = Object.entries(held)[0];
    assert.deepEqual((vllm.bodies.at(-1) as Record<string, unknown>)[field], value, field);
  }
});

test('a constraint on the simulated fleet or engine: a 400 naming it, never filler text', async () => {
  // An embedded fleet: whatever its engines, the gateway refuses at the door.
  const embedded = await doorOnlyFleet();
  for (const [url, server] of [
    [embedded.url, 'the simulated fleet'],
    [backends[0].url, 'the simulated engine'],
  ]) {
    for (const held of HELD) {
      const res = await post(url, chat(held));
      assert.equal(res.status, 400, server);
      const { error } = (await res.json()) as { error: { message: string; param: string } };
      const [field, value] = Object.entries(held)[0];
      const neutral = field === 'response_format' ? '{"type":"text"} or absent' : 'absent';
      assert.equal(
        error.message,
        `${field}: not supported by ${server} (expected ${neutral}), got ${describeValue(value)}`,
      );
      assert.equal(error.param, field);
    }
  }
});

test("each reasoning effort's output lengths are learned apart: a low effort is not planned as a high one", async () => {
  const front = await gateway(backends, 'goodput', { adminToken: ADMIN });
  const ask = async (reasoning_effort: 'low' | 'high', max_tokens: number) => {
    const res = await front.client.chat.completions
      .create({
        model: MODEL,
        messages: [{ role: 'user', content: 'x' }],
        reasoning_effort,
        max_tokens,
      })
      .withResponse();
    return res.response.headers.get('x-goodput-request-id') ?? '';
  };
  // Twenty-five of each: the simulated replies run past both caps, so each ends at its cap.
  await Promise.all(Array.from({ length: 25 }, () => [ask('low', 4), ask('high', 60)]).flat());
  type Record = {
    reasoning_effort?: string;
    demand: { output_p50: number; output_source: string };
  };
  const planned = async (effort: 'low' | 'high') =>
    decisionRecord<Record>(front.url, await ask(effort, 1_000), ADMIN);
  const [low, high] = [await planned('low'), await planned('high')];
  assert.deepEqual(
    [low.reasoning_effort, low.demand.output_p50, low.demand.output_source],
    ['low', 4, 'tenant_effort'],
  );
  assert.deepEqual([high.reasoning_effort, high.demand.output_p50], ['high', 60]);
});

test('a logit bias reaches a server as sent; the simulated fleet and engine refuse it by name', async () => {
  const vllm = await fakeVllm();
  const front = await gateway([vllm]);
  const logit_bias = { '50256': -100, '13': 2.5 };
  const asked = { model: MODEL, messages: [{ role: 'user' as const, content: 'x' }], logit_bias };
  await front.client.chat.completions.create(asked);
  assert.deepEqual((vllm.bodies.at(-1) as Record<string, unknown>).logit_bias, logit_bias);
  const embedded = await doorOnlyFleet();
  for (const [url, server] of [
    [embedded.url, 'the simulated fleet'],
    [backends[0].url, 'the simulated engine'],
  ]) {
    const res = await post(url, chat({ logit_bias }));
    assert.equal(res.status, 400, server);
    const { error } = (await res.json()) as { error: { message: string; param: string } };
    assert.equal(
      error.message,
      `logit_bias: not supported by ${server}, whose filler has no token probabilities to bias (expected {} or absent), got {"13":2.5,"50256":-100}`,
    );
    assert.equal(error.param, 'logit_bias');
  }
  // An empty bias asks for nothing, and is served.
  for (const url of [gw.url, backends[0].url]) {
    assert.equal((await post(url, chat({ logit_bias: {}, max_tokens: 2 }))).status, 200, url);
  }
});

test("a reasoning model's thinking reaches the client in the field it came in, streamed and whole", async () => {
  for (const [field, foreign] of [
    ['reasoning', false],
    ['reasoning_content', true],
  ] as const) {
    // The chunk where thinking ends carries its last words beside the reply's first.
    const vllm = await fakeVllm(
      [{ [field]: 'Two' }, { [field]: ' primes', content: '7' }, { content: ' and 11' }],
      foreign,
    );
    const front = await gateway([vllm]);
    const asked = { model: MODEL, messages: [{ role: 'user' as const, content: 'A prime?' }] };
    type Delta = Record<string, string | undefined>;
    const stream = await front.client.chat.completions.create({
      ...asked,
      stream: true,
      stream_options: { include_usage: true },
    });
    const got: [string, string][] = [];
    let used: number | undefined;
    for await (const chunk of stream) {
      const d = (chunk.choices[0]?.delta ?? {}) as Delta;
      for (const k of [field, 'content']) if (d[k]) got.push([k, d[k] as string]);
      used = chunk.usage?.completion_tokens ?? used;
    }
    const how = foreign ? 'rebuilt' : 'forwarded';
    assert.deepEqual(
      got,
      [
        [field, 'Two'],
        [field, ' primes'],
        ['content', '7'],
        ['content', ' and 11'],
      ],
      how,
    );
    assert.equal(used, 3, `${how}: the thinking tokens are counted`);
    const whole = await front.client.chat.completions.create(asked);
    const message = whole.choices[0].message as unknown as Delta;
    assert.equal(message.content, '7 and 11', how);
    assert.equal(message[field], 'Two primes', how);
  }
});

test("a chat's reasoning effort reaches the server as sent; the simulated engines take it too", async () => {
  const vllm = await fakeVllm([{ reasoning: 'Two' }, { content: '7' }]);
  const front = await gateway([vllm]);
  const asked = {
    model: MODEL,
    messages: [{ role: 'user' as const, content: 'A prime?' }],
    reasoning_effort: 'high' as const,
  };
  const whole = await front.client.chat.completions.create(asked);
  assert.equal(whole.choices[0].message.content, '7');
  const sent = vllm.bodies.at(-1) as Record<string, unknown>;
  assert.equal(sent.reasoning_effort, 'high');
  // A model that does not reason ignores it, as Llama 3's chat template does in vLLM.
  const filler = await gw.client.chat.completions.create({ ...asked, max_tokens: 3 });
  assert.equal(filler.usage?.completion_tokens, 3);
  const bad = await post(gw.url, chat({ reasoning_effort: 'max' }));
  assert.equal(bad.status, 400);
  const err = (await bad.json()) as { error: { param: string; message: string } };
  assert.equal(err.error.param, 'reasoning_effort');
  assert.equal(err.error.message, 'reasoning_effort: expected one of low, medium, high, got "max"');
});

test("goodput bench's client times a reasoning model's first token at its first thought", async () => {
  const vllm = await fakeVllm([{ reasoning: 'Two' }, { reasoning: ' primes' }, { content: '7' }]);
  const body = JSON.stringify({
    model: MODEL,
    messages: [{ role: 'user', content: 'A prime?' }],
    stream: true,
  });
  const record = await streamCall(
    { baseUrl: vllm.url, clock: wallClock, timers: wallTimers(), timeoutMs: 5_000 },
    { id: 'r1', tenant: 'default', sloClass: 'interactive', dueMs: 0, promptTokens: 4 },
    { path: '/v1/chat/completions', headers: { 'content-type': 'application/json' }, body },
  );
  assert.equal(record.ok, true);
  assert.equal(record.tokenTimesMs.length, 3, 'every token chunk, thinking included');
});

test("under priority scheduling each request goes upstream with its class's band as vLLM's priority", async () => {
  const vllm = await fakeVllm();
  const byPriority = await gateway([vllm], 'goodput', {
    engine: { schedulingPolicy: 'priority' },
  });
  const fcfs = await gateway([vllm]);
  const send = async (url: string, cls: string) => {
    const res = await post(url, chat(), { 'x-goodput-class': cls });
    assert.equal(res.status, 200, await res.clone().text());
    await res.arrayBuffer();
    return (vllm.bodies.at(-1) as { priority?: number }).priority;
  };
  assert.equal(await send(byPriority.url, 'interactive'), 0);
  assert.equal(await send(byPriority.url, 'batch'), 2);
  assert.equal(await send(fcfs.url, 'batch'), undefined, 'FCFS engines are sent none');
  // The class decides it: a client's own is refused at the door.
  const own = await post(byPriority.url, chat({ priority: -5 }));
  assert.equal(own.status, 400);
  assert.equal(
    ((await own.json()) as { error: { message: string } }).error.message,
    "priority: expected 0 or absent (the gateway sets it from the request's class), got -5",
  );
});

test('goodput engine takes a priority as vLLM does: only under priority scheduling', async () => {
  const [fcfs] = await engines(1);
  const [byPriority] = await engines(1, { schedulingPolicy: 'priority' });
  const ask = (url: string, priority: number) =>
    post(url, { model: MODEL, prompt: 'x', max_tokens: 2, priority }, {}, '/v1/completions');
  assert.equal((await ask(byPriority.url, 3)).status, 200);
  assert.equal((await ask(fcfs.url, 0)).status, 200);
  const refused = await ask(fcfs.url, 3);
  assert.equal(refused.status, 400);
  assert.equal(
    ((await refused.json()) as { error: { message: string } }).error.message,
    'priority: expected 0 or absent (this engine schedules first come, first served), got 3',
  );
});

test("the embedded engines read the priority the gateway set, as the simulator's engines get it", () => {
  const call = (body: object) => ({
    id: 'r1',
    kind: 'chat' as const,
    body: { model: MODEL, messages: [{ role: 'user', content: 'x' }], ...body },
    signal: new AbortController().signal,
  });
  const engine = { blockSize: 16, maxModelLen: 8192 };
  assert.equal(generationRequest(call({ priority: 2 }), engine).priority, 2);
  assert.equal(generationRequest(call({}), engine).priority, undefined);
});

test('truncate_prompt_tokens: a prompt past the context is served as its last k tokens, sized so at the door', async () => {
  const report = 'The incident report follows, line by line. '.repeat(4000);
  const ask = (extra: object) =>
    post(gw.url, {
      model: MODEL,
      messages: [{ role: 'user', content: report }],
      max_tokens: 2,
      ...extra,
    });
  const whole = await ask({});
  assert.equal(whole.status, 400, 'untruncated, it is past the context');
  const cut = await ask({ truncate_prompt_tokens: 1000 });
  assert.equal(cut.status, 200, await cut.clone().text());
  const body = (await cut.json()) as { usage: { prompt_tokens: number } };
  assert.equal(body.usage.prompt_tokens, 1000, "the engine's count: the tokens kept");
  const record = await fetch(
    `${gw.url}/admin/decisions/${cut.headers.get('x-goodput-request-id')}`,
    {
      headers: { authorization: `Bearer ${ADMIN}` },
    },
  );
  const { demand } = (await record.json()) as { demand: { input_tokens: number } };
  assert.equal(demand.input_tokens, 1000, 'admission planned the tokens kept');
  const past = await ask({ truncate_prompt_tokens: 9000 });
  assert.equal(past.status, 400);
  const { error } = (await past.json()) as { error: { message: string } };
  assert.equal(
    error.message,
    "truncate_prompt_tokens: expected at most the model's context (8192 tokens), or -1, got 9000",
  );
});
