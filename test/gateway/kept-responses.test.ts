// The Responses API's stored responses, as the official `openai` client uses them: a turn that
// names its last response (previous_response_id) sends only what is new, and goes upstream as
// the whole chat it is, its turns on one backend from the second on; the response is there to
// read the moment its stream says completed; its input items page as the client pages them;
// deleted, it is gone. A burst of branches from one response is each kept on its own trunk; a
// hostile id or flag is refused briefly by name. Not kept when asked not to be, and never
// another tenant's (a failed stream is kept as failed and not continued: responses-api.test.ts).
// Two gateway processes share them through a real Redis; while Redis is down one kept there is a
// 503 with a Retry-After, never "not found", and what a gateway kept meanwhile moves to Redis
// when it returns.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { Registry } from 'prom-client';
import { sha256 } from '../../src/gateway/api-keys.ts';
import { deleteKept, loadKept } from '../../src/gateway/http/kept-records.ts';
import type { SharedStore } from '../../src/gateway/shared/shared-store.ts';
import { StateMetrics } from '../../src/gateway/state-metrics.ts';
import { MODEL, engines, gateway, metricValue, policyWith, until } from './gateway-kit.ts';
import { fakeVllm } from './fake-vllm.ts';
import { serveRefuses, startServe } from './process-kit.ts';
import { startRedis } from './redis-kit.ts';

const WEATHER = {
  type: 'function' as const,
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } } },
  strict: false,
};

/** What the backend that served the last turn was sent. */
function lastSent(...backends: { readonly bodies: unknown[] }[]): Record<string, unknown> {
  const all = backends.flatMap((b) => b.bodies) as Record<string, unknown>[];
  return all.at(-1) as Record<string, unknown>;
}

test("a conversation's next turn names its last response and sends only what is new: upstream, the whole chat, its turns on one backend", async () => {
  const [a, b] = [await fakeVllm([{ content: 'Rain.' }]), await fakeVllm([{ content: 'Rain.' }])];
  const policy = policyWith({ routing: { type: 'round-robin', session: { mode: 'hard' } } });
  const front = await gateway([a, b], policy);
  await until(async () => (await metricValue(front.url, 'goodput_backend_ready')) === 2);
  const client = front.client;
  const first = await client.responses.create({
    model: MODEL,
    instructions: 'Be brief.',
    input: 'Weather in Oslo?',
    tools: [WEATHER],
  });
  assert.equal(first.status, 'completed');
  assert.equal(first.previous_response_id, null);

  // Streamed, the response is kept before its last event goes: read back at once, it is there.
  const stream = await client.responses.create({
    model: MODEL,
    instructions: 'Be terse.',
    input: 'And Bergen?',
    previous_response_id: first.id,
    stream: true,
  });
  let second: OpenAI.Responses.Response | undefined;
  for await (const event of stream) {
    if (event.type !== 'response.completed') continue;
    second = event.response;
    // The client adds output_text, its own sum of the output's text, to what it reads.
    const { output_text: _, ...kept } = await client.responses.retrieve(second.id);
    assert.deepEqual(kept, second, 'kept as it was sent');
  }
  assert.ok(second !== undefined);
  assert.equal(second.previous_response_id, first.id);
  // A turn's instructions and tools are its own; the history is the earlier turns and output.
  const sent = lastSent(a, b);
  assert.deepEqual(sent.messages, [
    { role: 'system', content: 'Be terse.' },
    { role: 'user', content: 'Weather in Oslo?' },
    { role: 'assistant', content: [{ type: 'text', text: 'Rain.' }] },
    { role: 'user', content: 'And Bergen?' },
  ]);
  assert.equal('tools' in sent, false, 'the first turn’s tools are not carried on');

  const third = await client.responses.create({
    model: MODEL,
    input: [{ role: 'user', content: 'Thanks.' }],
    previous_response_id: second.id,
  });
  assert.equal((lastSent(a, b).messages as unknown[]).length, 5, 'three turns, two replies');
  // From its second turn the conversation is a session: round-robin put the second turn on the
  // other backend, and the third follows it there (its prefix cache).
  const served = [a.bodies.length, b.bodies.length].sort();
  assert.deepEqual(served, [1, 2], 'the second and third turns on one backend');

  // Its input items, as the client pages them: one at a time, oldest first.
  const items: OpenAI.Responses.ResponseItem[] = [];
  for await (const item of client.responses.inputItems.list(third.id, { limit: 1, order: 'asc' }))
    items.push(item);
  assert.deepEqual(
    items.map((i) => (i.type === 'message' ? [i.role, i.content[0]] : [i.type])),
    [
      ['user', { type: 'input_text', text: 'Weather in Oslo?' }],
      ['assistant', { type: 'output_text', text: 'Rain.', annotations: [], logprobs: [] }],
      ['user', { type: 'input_text', text: 'And Bergen?' }],
      ['assistant', { type: 'output_text', text: 'Rain.', annotations: [], logprobs: [] }],
      ['user', { type: 'input_text', text: 'Thanks.' }],
    ],
  );
  assert.equal(new Set(items.map((i) => i.id)).size, 5, 'each its own id');
  const newest = await client.responses.inputItems.list(third.id, { limit: 2 });
  assert.deepEqual(
    newest.data.map((i) => i.id),
    items
      .slice(3)
      .reverse()
      .map((i) => i.id),
    'newest first by default',
  );
  assert.equal(newest.has_more, true);

  // Deleted, it is gone: read, deleted again or continued.
  const gone = await client.responses.delete(second.id);
  assert.deepEqual(gone, { id: second.id, object: 'response', deleted: true });
  await assert.rejects(
    client.responses.retrieve(second.id),
    (e: { status: number }) => e.status === 404,
  );
  await assert.rejects(
    client.responses.delete(second.id),
    (e: { status: number }) => e.status === 404,
  );
  await assert.rejects(
    client.responses.create({ model: MODEL, input: 'More?', previous_response_id: second.id }),
    (e: { status: number; code: string }) =>
      e.status === 400 && e.code === 'previous_response_not_found',
  );
  const count = (op: string, result: string) =>
    metricValue(front.url, 'goodput_kept_responses_total', { op, result });
  assert.equal(await count('save', 'ok'), 3);
  assert.equal(await metricValue(front.url, 'goodput_kept_responses_memory'), 2, 'one deleted');
  assert.ok((await metricValue(front.url, 'goodput_kept_responses_memory_bytes')) > 1_000);
  assert.equal(await count('delete', 'ok'), 1);
  assert.equal(await count('delete', 'none'), 1);
  assert.ok((await count('load', 'none')) >= 2);
});

test("a response asked not to be kept is not; one tenant's is never another's", async () => {
  const hex = (k: string) => sha256(k).toString('hex');
  const policy = policyWith({
    tenants: {
      acme: { api_keys_sha256: [hex('sk-acme')] },
      umbrella: { api_keys_sha256: [hex('sk-umbrella')] },
    },
  });
  const front = await gateway([await fakeVllm([{ content: 'Yes.' }])], policy, {
    apiKey: 'sk-acme',
  });
  const acme = front.client;
  const umbrella = new OpenAI({ baseURL: `${front.url}/v1`, apiKey: 'sk-umbrella', maxRetries: 0 });
  const status = (e: { status: number }) => e.status;

  const unkept = await acme.responses.create({ model: MODEL, input: 'Hi', store: false });
  await assert.rejects(
    acme.responses.retrieve(unkept.id),
    (e: { status: number }) => status(e) === 404,
  );
  await assert.rejects(
    acme.responses.create({ model: MODEL, input: 'Again', previous_response_id: unkept.id }),
    (e: { code: string }) => e.code === 'previous_response_not_found',
  );

  const mine = await acme.responses.create({ model: MODEL, input: 'Secret plans' });
  for (const ask of [
    () => umbrella.responses.retrieve(mine.id),
    () => umbrella.responses.delete(mine.id),
    () => umbrella.responses.inputItems.list(mine.id),
  ]) {
    await assert.rejects(ask(), (e: { status: number }) => status(e) === 404);
  }
  await assert.rejects(
    umbrella.responses.create({ model: MODEL, input: 'Tell me', previous_response_id: mine.id }),
    (e: { status: number; code: string }) => e.code === 'previous_response_not_found',
  );
  // Without a key, nothing is read.
  const anonymous = await fetch(`${front.url}/v1/responses/${mine.id}`);
  assert.equal(anonymous.status, 401);
  assert.equal((await acme.responses.retrieve(mine.id)).id, mine.id, 'still there for its tenant');
});

test("a tenant's session quota counts conversations: kept one-turn requests are none, continued turns are", async () => {
  const policy = policyWith({
    tenants: { '*': { quotas: { window_ms: 60_000, max_concurrent_sessions: 1 } } },
  });
  const front = await gateway(await engines(1), policy);
  // Each reply takes 200 engine steps of 2 ms: the requests of a batch are in flight together.
  const ask = (extra: object) =>
    front.client.responses
      .create({
        model: MODEL,
        input: 'Hi',
        max_output_tokens: 200,
        ignore_eos: true,
        ...extra,
      } as never)
      .then(
        (r: OpenAI.Responses.Response) => r,
        (e: { status: number; code: string }) => e,
      );
  const firsts = await Promise.all([ask({}), ask({}), ask({})]);
  for (const r of firsts) assert.ok('id' in r, `a first turn is no session: ${JSON.stringify(r)}`);
  const [one, two] = firsts as OpenAI.Responses.Response[];
  const nexts = await Promise.all([
    ask({ previous_response_id: one.id }),
    ask({ previous_response_id: two.id }),
  ]);
  const refused = nexts.filter((r) => !('id' in r)) as { status: number; code: string }[];
  assert.deepEqual(
    refused.map((e) => [e.status, e.code]),
    [[429, 'tenant_sessions']],
    'two conversations at once, one allowed',
  );
});

test('a burst of branches from one response is served and kept, each with the trunk before it', async () => {
  const vllm = await fakeVllm([{ content: 'Noted.' }]);
  const front = await gateway([vllm]);
  const trunk = await front.client.responses.create({ model: MODEL, input: 'The plan so far.' });
  const BRANCHES = 100;
  const branches = await Promise.all(
    Array.from({ length: BRANCHES }, (_, i) =>
      front.client.responses.create({
        model: MODEL,
        input: `Option ${i}?`,
        previous_response_id: trunk.id,
      }),
    ),
  );
  assert.equal(new Set(branches.map((b) => b.id)).size, BRANCHES);
  for (const b of branches) assert.equal(b.previous_response_id, trunk.id);
  const count = (op: string, result: string) =>
    metricValue(front.url, 'goodput_kept_responses_total', { op, result });
  assert.equal(await count('save', 'ok'), BRANCHES + 1);
  assert.equal(await count('load', 'ok'), BRANCHES);
  const last = branches[BRANCHES - 1];
  const items = await front.client.responses.inputItems.list(last.id, { order: 'asc' });
  assert.deepEqual(
    items.data.map((i) => (i.type === 'message' ? i.content[0] : i.type)),
    [
      { type: 'input_text', text: 'The plan so far.' },
      { type: 'output_text', text: 'Noted.', annotations: [], logprobs: [] },
      { type: 'input_text', text: `Option ${BRANCHES - 1}?` },
    ],
    'its own branch, none of the others',
  );
});

test('a hostile previous_response_id or bad flag is refused briefly by name, and the gateway serves on', async () => {
  const front = await gateway([await fakeVllm()]);
  const huge = 'resp_'.padEnd(1_000_000, 'x');
  const r = await fetch(`${front.url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, input: 'Hi', previous_response_id: huge }),
  });
  const text = await r.text();
  assert.equal(r.status, 400);
  assert.ok(text.length < 1_000, `${text.length} bytes of error`);
  const { error } = JSON.parse(text) as { error: { message: string; param: string } };
  assert.match(error.message, /^previous_response_id: expected a response id of 1 to 256 char/);
  assert.equal(error.param, 'previous_response_id');
  // Looked up by path, an id longer than any kept is none, and never a key the store is asked for.
  const untouched = new Proxy({} as SharedStore, {
    get: () => () => assert.fail('the store was asked'),
  });
  const deps = {
    store: untouched,
    keepResponses: true,
    metrics: { state: new StateMetrics(new Registry()) },
  };
  assert.equal(await loadKept(deps, 'default', 'x'.repeat(257)), undefined);
  assert.equal(await deleteKept(deps, 'default', 'x'.repeat(257)), false);
  assert.equal(
    (await front.client.responses.create({ model: MODEL, input: 'Hi' })).status,
    'completed',
  );
  await serveRefuses([
    ['--responses-ttl', 'soon', 'a number ≥ 0'],
    ['--responses-memory', '0', 'a number > 0'],
  ]);
});

test('a gateway told to keep none refuses a turn that follows one, and says none are kept', async () => {
  const front = await gateway([await fakeVllm()], 'goodput', { keptResponses: { ttlMs: 0 } });
  const served = await front.client.responses.create({ model: MODEL, input: 'Hi' });
  await assert.rejects(
    front.client.responses.create({ model: MODEL, input: 'x', previous_response_id: served.id }),
    /400 previous_response_id: not supported: this gateway \(--responses-ttl 0\) stores no responses/,
  );
  await assert.rejects(
    front.client.responses.retrieve(served.id),
    /404 .*no responses are kept here \(--responses-ttl 0\)/,
  );
});

test('lookups asked wrongly are a 4xx naming what was wrong, counted, and the gateway serves on', async () => {
  const front = await gateway([await fakeVllm()]);
  const kept = await front.client.responses.create({ model: MODEL, input: 'Hi' });
  const at = (path: string, init?: RequestInit) => fetch(`${front.url}/v1/responses/${path}`, init);
  const refusals: [Promise<Response>, number, RegExp][] = [
    [
      at(`${kept.id}/input_items?limit=0`),
      400,
      /^limit: expected an integer in \[1, 100\], got "0"$/,
    ],
    [at(`${kept.id}/input_items?limit=abc`), 400, /^limit: expected an integer/],
    [at(`${kept.id}/input_items?order=up`), 400, /^order: expected asc or desc, got "up"$/],
    [
      at(`${kept.id}/input_items?after=nope`),
      400,
      /^after: no item "nope" in this response's input$/,
    ],
    [
      at(`${kept.id}?stream=true`),
      400,
      /^stream: response .* was not created with background and stream true/,
    ],
    [at(`${kept.id}/cancel`, { method: 'POST' }), 400, /is not a background response/],
    [at('resp_unknown/cancel', { method: 'POST' }), 404, /no response "resp_unknown" is stored/],
    [at(`${'x'.repeat(4000)}`), 404, /^no response "x{79}… is stored/],
    [at(kept.id, { method: 'PUT' }), 405, /method not allowed \(allowed: GET, DELETE\)/],
  ];
  for (const [answer, status, message] of refusals) {
    const r = await answer;
    const body = (await r.json()) as { error: { message: string } };
    assert.equal(r.status, status, body.error.message);
    assert.match(body.error.message, message);
    assert.ok(r.headers.get('x-goodput-request-id'), 'findable by its id');
  }
  const counted = async (reason: string) =>
    metricValue(front.url, 'goodput_invalid_requests_total', { reason });
  assert.equal(await counted('invalid_request'), 6);
  assert.equal(await counted('not_found'), 2);
  assert.equal(await counted('method_not_allowed'), 1);
  assert.equal((await front.client.responses.retrieve(kept.id)).id, kept.id);
});

test('two gateways share kept responses through Redis; while it is down, one kept there is a 503, never "not found"', async () => {
  const redis = await startRedis();
  const [backend] = await engines(1);
  const args = ['--backend', backend.url, '--redis', redis.url, '--gateway-replicas', '2'];
  const [a, b] = [await startServe(args), await startServe(args)];
  const client = (g: { url: string }) =>
    new OpenAI({ baseURL: `${g.url}/v1`, apiKey: 'none', maxRetries: 0 });
  const [onA, onB] = [client(a), client(b)];
  const first = await onA.responses.create({ model: MODEL, input: 'Hi', max_output_tokens: 4 });
  const second = await onB.responses.create({
    model: MODEL,
    input: 'Go on',
    previous_response_id: first.id,
    max_output_tokens: 4,
  });
  const listed = await onA.responses.inputItems.list(second.id, { order: 'asc' });
  assert.deepEqual(
    listed.data.map((i) => (i.type === 'message' ? i.role : i.type)),
    ['user', 'assistant', 'user'],
    'continued on B, read on A',
  );
  await onB.responses.delete(first.id);
  await assert.rejects(
    onA.responses.retrieve(first.id),
    (e: { status: number }) => e.status === 404,
  );

  await redis.kill();
  await until(async () => (await metricValue(a.url, 'goodput_shared_store_up')) === 0);
  const during = await onA.responses.create({ model: MODEL, input: 'Hi', max_output_tokens: 4 });
  const next = await onA.responses.create({
    model: MODEL,
    input: 'Go on',
    previous_response_id: during.id,
    max_output_tokens: 4,
  });
  assert.equal(next.previous_response_id, during.id, 'kept in memory on A, continued on A');
  for (const ask of [
    () => onA.responses.retrieve(second.id),
    () => onA.responses.create({ model: MODEL, input: 'x', previous_response_id: second.id }),
  ]) {
    await assert.rejects(ask(), (e: { status: number; headers: Headers }) => {
      assert.equal(e.status, 503);
      assert.ok(Number(e.headers.get('retry-after')) >= 1);
      return true;
    });
  }
  assert.ok(
    (await metricValue(a.url, 'goodput_kept_responses_total', {
      op: 'load',
      result: 'unavailable',
    })) >= 2,
  );
  await redis.restart();
  await until(async () => (await metricValue(a.url, 'goodput_shared_store_up')) === 1);
  // A fresh Redis holds nothing kept before; what A kept while it was down, A moved there.
  await assert.rejects(
    onA.responses.retrieve(second.id),
    (e: { status: number }) => e.status === 404,
  );
  await until(async () => (await onB.responses.retrieve(next.id).catch(() => null)) !== null);
  assert.equal((await onB.responses.retrieve(during.id)).id, during.id, 'B finds it too');
  for (const g of [a, b]) assert.doesNotMatch(g.proc.output(), /"level":50|internal error/);
});
