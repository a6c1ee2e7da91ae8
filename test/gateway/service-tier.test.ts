// OpenAI's service_tier through the gateway, from the OpenAI SDK: a policy that maps `flex` to
// the batch class serves a flex request there, its tier read by the gateway and not sent on; a
// tier mapped to no class, or one that disagrees with a class header, is refused by name; the
// Responses API says which tier served the response; and a tenant not granted the tier's class
// is refused by the contract, as a header asking for it is.
import assert from 'node:assert/strict';
import test from 'node:test';
import OpenAI from 'openai';
import { presetPolicy } from '../../src/core/config/presets.ts';
import { fakeVllm } from './fake-vllm.ts';
import { MODEL, decisionRecord, engines, gateway, policyWith, postChat } from './gateway-kit.ts';

const ADMIN = 'service-tier-admin';
const TIERED = policyWith({ service_tiers: { flex: 'batch' } });
const MESSAGES = [{ role: 'user' as const, content: 'Is a flex request slower?' }];

const idOf = (r: { response: Response } | Response) =>
  ('response' in r ? r.response : r).headers.get('x-goodput-request-id') ?? '';

test('service_tier flex is served in the class the policy maps it to, and is not sent on', async () => {
  const vllm = await fakeVllm();
  const front = await gateway([vllm], TIERED, { adminToken: ADMIN });
  const flex = await front.client.chat.completions
    .create({ model: MODEL, messages: MESSAGES, max_tokens: 2, service_tier: 'flex' })
    .withResponse();
  assert.equal(flex.data.choices[0].finish_reason, 'stop');
  const record = await decisionRecord<{ class: string }>(front.url, idOf(flex), ADMIN);
  assert.equal(record.class, 'batch');
  assert.equal((vllm.bodies.at(-1) as Record<string, unknown>).service_tier, undefined);
  // auto, or none: the tenant's own class.
  const auto = await front.client.chat.completions
    .create({ model: MODEL, messages: MESSAGES, max_tokens: 2, service_tier: 'auto' })
    .withResponse();
  const its = await decisionRecord<{ class: string }>(front.url, idOf(auto), ADMIN);
  assert.equal(its.class, 'interactive');
});

test('a tier mapped to no class, or against a class header, is a 400 naming it; the gateway serves on', async () => {
  const front = await gateway([await fakeVllm()], TIERED, { adminToken: ADMIN });
  const scale = await postChat(front.url, { service_tier: 'scale' });
  assert.equal(scale.status, 400);
  const body = (await scale.json()) as { error: { message: string; param: string } };
  assert.equal(body.error.param, 'service_tier');
  assert.match(body.error.message, /expected auto, default, flex or absent\), got "scale"/);
  assert.equal(scale.headers.get('x-goodput-reason'), 'invalid_request');
  const both = await postChat(
    front.url,
    { service_tier: 'flex' },
    { 'x-goodput-class': 'reasoning' },
  );
  assert.equal(both.status, 400);
  assert.match(
    ((await both.json()) as { error: { message: string } }).error.message,
    /^x-goodput-class \("reasoning"\) and service_tier \("flex", served as batch\) disagree/,
  );
  const fine = await postChat(front.url, { max_tokens: 2 });
  assert.equal(fine.status, 200, await fine.text());
  // Without a policy that maps it, flex is refused as before.
  const plain = await gateway([await fakeVllm()]);
  assert.equal((await postChat(plain.url, { service_tier: 'flex' })).status, 400);
});

test('the Responses API says the tier that served a response', async () => {
  const front = await gateway(await engines(1), TIERED, { adminToken: ADMIN });
  const flex = await front.client.responses.create({
    model: MODEL,
    input: 'Hi',
    max_output_tokens: 4,
    service_tier: 'flex',
  });
  assert.equal(flex.service_tier, 'flex');
  const plain = await front.client.responses.create({
    model: MODEL,
    input: 'Hi',
    max_output_tokens: 4,
  });
  assert.equal(plain.service_tier, 'default');
});

test('chat and text completions name the tier that served them, whole and in every chunk', async () => {
  const front = await gateway(await engines(1), TIERED);
  const asked = { model: MODEL, messages: MESSAGES, max_tokens: 12, ignore_eos: true } as const;
  for (const client of [front.client, front.inProcess]) {
    // Streamed, its token chunks forwarded from the engine as they came, but for the tier.
    const stream = await client.chat.completions.create({
      ...asked,
      stream: true,
      stream_options: { include_usage: true },
      service_tier: 'flex',
    });
    const tiers = [];
    for await (const chunk of stream) tiers.push(chunk.service_tier);
    assert.equal(tiers.length, 15, 'role, 12 tokens, finish, usage');
    assert.deepEqual(new Set(tiers), new Set(['flex']));
    const auto = await client.chat.completions.create({ ...asked, service_tier: 'auto' });
    assert.equal(auto.service_tier, 'default', 'auto is served as the default tier');
    // Named by no request, no tier is said, as vLLM answers.
    const plain = await client.chat.completions.create({ ...asked, stream: true });
    for await (const chunk of plain) assert.equal('service_tier' in chunk, false);
    assert.equal('service_tier' in (await client.chat.completions.create(asked)), false);
  }
  const text = await postCompletion(front.url, { service_tier: 'flex', stream: true });
  const events = text.split('\n\n').filter((e) => e.startsWith('data: {'));
  assert.equal(events.length, 13, '12 tokens, then the finish');
  for (const e of events) assert.equal(JSON.parse(e.slice(6)).service_tier, 'flex', e);
  const whole = JSON.parse(await postCompletion(front.url, { service_tier: 'flex' }));
  assert.equal(whole.service_tier, 'flex');
});

/** A text completion's body, asked of `url` with `fields` and twelve tokens. */
async function postCompletion(url: string, fields: object): Promise<string> {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: MODEL,
      prompt: 'Hi',
      max_tokens: 12,
      ignore_eos: true,
      ...fields,
    }),
  });
  assert.equal(res.status, 200);
  return res.text();
}

test('a tenant not granted the class a tier names is refused by the contract, as a header is', async () => {
  const policy = policyWith({
    service_tiers: { flex: 'batch' },
    tenants: { '*': { classes: ['interactive'] } },
  });
  const front = await gateway([await fakeVllm()], policy, { adminToken: ADMIN });
  const client = new OpenAI({ baseURL: `${front.url}/v1`, apiKey: 'none', maxRetries: 0 });
  await assert.rejects(
    client.chat.completions.create({ model: MODEL, messages: MESSAGES, service_tier: 'flex' }),
    (e: unknown) => e instanceof OpenAI.APIError && e.status === 403,
  );
  const header = await postChat(front.url, {}, { 'x-goodput-class': 'batch' });
  assert.equal(header.status, 403);
  assert.equal(header.headers.get('x-goodput-reason'), 'class_not_granted');
  // It names the class asked for and those granted.
  const { error } = (await header.json()) as { error: { message: string } };
  assert.equal(
    error.message,
    'this tenant is not granted the class it asked for, "batch" (granted: interactive)',
  );
});

test('in a standing overload, only a body that names a tier is parsed before it is refused', async () => {
  const slow = { profile: 'const:step_ms=10', maxNumSeqs: 4 };
  const tiered = { ...presetPolicy('goodput'), serviceTiers: { flex: 'batch' as const } };
  const front = await gateway(await engines(2, slow), tiered, { engine: slow, adminToken: ADMIN });
  // Half name their class in a header: the queue alone may refuse those unread. The rest may
  // be flex requests, served as batch, whose queue stands empty: each body is read, and one
  // that names no tier is refused as its class asked, unparsed; a flex one is served as batch.
  // An escaped key (`"service\u005ftier"`) names the tier as well as the plain one.
  const kinds = ['named', 'named', 'plain', 'flex', 'escaped'] as const;
  const send = async (i: number) => {
    const kind = kinds[i % kinds.length];
    const tiered = kind === 'flex' || kind === 'escaped';
    const fields = {
      model: MODEL,
      messages: [{ role: 'user', content: `wave ${i}` }],
      ...(tiered ? { service_tier: 'flex', max_tokens: 4 } : { max_tokens: 60 }),
      ignore_eos: true,
    };
    const text = JSON.stringify(fields);
    const res = await fetch(`${front.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(kind === 'named' ? { 'x-goodput-class': 'interactive' } : {}),
      },
      body: kind === 'escaped' ? text.replace('"service_tier"', '"service\\u005ftier"') : text,
    });
    await res.arrayBuffer();
    return { kind, status: res.status, id: idOf(res) };
  };
  const answers = [];
  for (let wave = 0; wave < 3; wave++)
    answers.push(
      ...(await Promise.all(Array.from({ length: 150 }, (_, i) => send(wave * 150 + i)))),
    );
  const unread = { named: 0, plain: 0, flex: 0, escaped: 0 };
  for (const a of answers) {
    const r = await decisionRecord<{ demand: unknown; class: string }>(front.url, a.id, ADMIN);
    if (a.kind === 'flex' || a.kind === 'escaped') assert.equal(r.class, 'batch', a.kind);
    if (a.status === 503 && r.demand === null) unread[a.kind]++;
  }
  assert.ok(unread.named > 0, 'a standing overload refuses named requests unread');
  assert.ok(unread.plain > 0, 'a body that names no tier is refused unparsed');
  assert.equal(unread.flex, 0, 'a flex request is parsed, and judged as batch');
  assert.equal(unread.escaped, 0, 'so is one whose key is escaped');
});
