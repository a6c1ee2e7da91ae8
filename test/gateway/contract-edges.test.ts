// The edges of the gateway's HTTP contract, through a real gateway in front of real `goodput
// engine` servers: every answer names its request, wrong methods get 405 with Allow, refusals
// say the sizes a client can act on, token-id prompts, /v1/models behind the key, a client's
// deadline that passes mid-generation (504, or an SSE error event, recorded as an expiry), and
// every refusal counted and findable by its request id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import OpenAI, { APIError } from 'openai';
import { sha256 } from '../../src/gateway/api-keys.ts';
import { ENGINE_DEFAULTS, buildEngineConfig } from '../../src/engine/engine-spec.ts';
import {
  MODEL,
  aftermath,
  engines,
  gateway,
  metricValue,
  policyWith,
  postChat,
  rawPost,
} from './gateway-kit.ts';

// Node warns (TimeoutOverflowWarning) when a timer is set past 2^31 ms; none may be.
const warnings: string[] = [];
process.on('warning', (w) => warnings.push(w.name));

const hex = (k: string) => sha256(k).toString('hex');
const ADMIN = 'admin-secret';
// Replies that run to their cap of themselves, as a model that talks long does: a request is
// planned at its class's lengths, not its cap, unless it ignores EOS (the deadline tests below).
const backends = await engines(2, { lengths: () => 5_000 });
const gw = await gateway(
  backends,
  policyWith({
    tenants: {
      acme: { api_keys_sha256: [hex('sk-acme')] },
      solo: { api_keys_sha256: [hex('sk-solo')], quotas: { max_concurrent_requests: 1 } },
    },
  }),
  { adminToken: ADMIN, apiKey: 'sk-acme' },
);
const ACME = { authorization: 'Bearer sk-acme' };
const SOLO = { authorization: 'Bearer sk-solo' };
const CONTEXT = buildEngineConfig(ENGINE_DEFAULTS).model.maxModelLen;
/** Every status the gateway answered in this file: a 500 is a bug wherever it shows. */
const statuses: number[] = [];

async function send(path: string, init: RequestInit = {}): Promise<Response> {
  const res = await fetch(`${gw.url}${path}`, init);
  statuses.push(res.status);
  return res;
}

function post(
  body: unknown,
  headers: Record<string, string> = ACME,
  path = '/v1/chat/completions',
): Promise<Response> {
  return send(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const chat = (fields: Record<string, unknown> = {}) => ({
  model: MODEL,
  messages: [{ role: 'user', content: 'hi' }],
  max_tokens: 3,
  ...fields,
});

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

async function errorOf(res: Response): Promise<ErrorBody['error']> {
  const body = (await res.json()) as ErrorBody;
  assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
  return body.error;
}

interface DecisionRecord {
  tenant: string | null;
  admission: { result: string; reason: string | null; status: number | null };
}

/** The decision record of an answer, found by the id it carries: [result, reason, status, tenant]. */
async function recorded(res: Response): Promise<unknown[]> {
  const id = res.headers.get('x-goodput-request-id');
  assert.ok(id, 'the answer names its request');
  if (!res.bodyUsed) await res.body?.cancel();
  const found = await fetch(`${gw.url}/admin/decisions/${id}`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  assert.equal(found.status, 200, `a decision record for ${id}`);
  const r = (await found.json()) as DecisionRecord;
  return [r.admission.result, r.admission.reason, r.admission.status, r.tenant];
}

/** A stream that holds `solo`'s one slot for about a second; resolves once it is answering. */
async function soloStream(): Promise<Response> {
  const res = await post({ ...chat(), max_tokens: 500, ignore_eos: true, stream: true }, SOLO);
  assert.equal(res.status, 200);
  return res;
}

// ---- every answer names its request ----------------------------------------------------------

const named: [name: string, send: () => Promise<Response>, status: number, code: string][] = [
  ['401 (no API key)', () => post(chat(), {}), 401, 'invalid_api_key'],
  ['400 (bad body)', () => post('{"model": '), 400, 'invalid_value'],
  ['404 (unknown model)', () => post(chat({ model: 'gpt-17' })), 404, 'model_not_found'],
  [
    '413 (body over the limit)',
    () => post(chat({ messages: [{ role: 'user', content: 'x'.repeat(5 * 1024 * 1024) }] })),
    413,
    'payload_too_large',
  ],
];

for (const [name, sendIt, status, code] of named) {
  test(`x-goodput-request-id on a ${name}`, async () => {
    const res = await sendIt();
    assert.equal(res.status, status);
    assert.ok(res.headers.get('x-goodput-request-id'));
    assert.equal((await errorOf(res)).code, code);
  });
}

test('a completion path with a query string is the same route: served, and a body over the limit closes its connection', async () => {
  const path = '/v1/chat/completions?api-version=1';
  assert.equal((await post(chat(), ACME, path)).status, 200);
  const big = { messages: [{ role: 'user', content: 'x'.repeat(5 * 1024 * 1024) }] };
  const res = await post(chat(big), ACME, path);
  assert.equal(res.status, 413);
  // Not kept alive with an upload of unknown length still coming (the lingering close).
  assert.equal(res.headers.get('connection'), 'close');
});

test('x-goodput-request-id on a 503 shutting_down refusal', async () => {
  const draining = await gateway(backends);
  const stream = await postChat(draining.url, { max_tokens: 150, ignore_eos: true, stream: true });
  assert.equal(stream.status, 200);
  const drained = draining.drain(10_000);
  // On a connection of its own: the drain closes idle pooled ones.
  const res = await rawPost(draining.url, JSON.stringify(chat()));
  assert.equal(res.status, 503);
  assert.ok(res.header('x-goodput-request-id'));
  assert.equal(res.header('x-goodput-reason'), 'shutting_down');
  assert.ok(Number(res.header('retry-after')) >= 1);
  assert.equal((JSON.parse(res.body) as ErrorBody).error.code, 'shutting_down');
  assert.match(await stream.text(), /\[DONE\]/);
  assert.deepEqual(await drained, { finished: 1, cut: 0 });
});

const unnamed: [name: string, method: string, path: string, status: number][] = [
  ['405 (wrong method)', 'GET', '/v1/chat/completions', 405],
  ['404 (unknown path)', 'GET', '/v1/nope', 404],
  ['401 from /v1/models', 'GET', '/v1/models', 401],
];

for (const [name, method, path, status] of unnamed) {
  test(`x-goodput-request-id on a ${name}`, async () => {
    const res = await send(path, { method });
    assert.equal(res.status, status);
    await res.text();
    assert.ok(res.headers.get('x-goodput-request-id'));
  });
}

// ---- methods and paths -------------------------------------------------------------------------

const methods: [method: string, path: string, allow: string][] = [
  ['GET', '/v1/chat/completions', 'POST'],
  ['PUT', '/v1/completions', 'POST'],
  ['DELETE', '/v1/models', 'GET, HEAD'],
  ['POST', '/readyz', 'GET, HEAD'],
  ['POST', '/health', 'GET, HEAD'],
  ['POST', '/metrics', 'GET, HEAD'],
];

for (const [method, path, allow] of methods) {
  test(`${method} ${path} → 405, Allow: ${allow}`, async () => {
    const res = await send(path, { method, headers: ACME });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), allow);
    const e = await errorOf(res);
    assert.equal(e.code, 'method_not_allowed');
    assert.equal(e.message, `${method} ${path}: method not allowed (allowed: ${allow})`);
  });
}

for (const [method, path] of [
  ['GET', '/v1/nope'],
  ['POST', '/v1/embeddings'],
]) {
  test(`${method} ${path} → 404 not_found`, async () => {
    const res = await send(path, { method, headers: ACME });
    assert.equal(res.status, 404);
    const e = await errorOf(res);
    assert.equal(e.code, 'not_found');
    assert.equal(e.message, `${method} ${path}: no such route`);
  });
}

// ---- the body's edges ------------------------------------------------------------------------

for (const stream of [undefined, false]) {
  test(`stream_options with stream ${String(stream)} → 400 naming stream_options`, async () => {
    const res = await post(chat({ stream, stream_options: { include_usage: true } }));
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('x-goodput-reason'), 'invalid_request');
    const e = await errorOf(res);
    assert.equal(e.param, 'stream_options');
    assert.equal(e.code, 'invalid_value');
    assert.equal(e.message, 'stream_options: only allowed when stream is true');
  });
}

test('a context_length refusal gives the prompt tokens, max_tokens and the limit', async () => {
  const messages = [{ role: 'user', content: 'How long is this prompt, in tokens?' }];
  const served = await post(chat({ messages }));
  assert.equal(served.status, 200);
  const prompt = ((await served.json()) as { usage: { prompt_tokens: number } }).usage
    .prompt_tokens;
  assert.ok(prompt > 1);
  const res = await post(chat({ messages, max_tokens: 100_000 }));
  assert.equal(res.status, 400);
  assert.equal(res.headers.get('x-goodput-reason'), 'context_length');
  const e = await errorOf(res);
  // OpenAI's code and field, as the engines answer; the reason stays the gateway's own.
  assert.deepEqual([e.code, e.param], ['context_length_exceeded', 'messages']);
  // Its size is an estimate: the gateway refuses on the fewest tokens it can be, and says so.
  assert.equal(
    e.message,
    `This model's maximum context length is ${CONTEXT} tokens: the prompt (at least 1 token) and max_tokens (100000) exceed it`,
  );
});

test("a prompt over the context by the gateway's estimate alone goes to the backend, which counts it", async () => {
  // 36,000 spaces: 9,000 tokens by the estimate, 282 by Llama 3's tokenizer. The gateway cannot
  // tell, so the backend judges: here an engine that counts as the estimate does, and refuses.
  const spaces = [{ role: 'user', content: ' '.repeat(36_000) }];
  const res = await post(chat({ messages: spaces, max_tokens: 5 }));
  assert.equal(res.status, 400);
  assert.equal(res.headers.get('x-goodput-reason'), null, 'not refused by the gateway');
  const e = await errorOf(res);
  assert.equal(e.code, 'context_length_exceeded', "the engine's code, which the gateway's matches");
  assert.match(e.message, /context/);
});

test('/v1/completions with a token-id prompt is served: usage counts the ids', async () => {
  const res = await post(
    { model: MODEL, prompt: [1, 2, 3], max_tokens: 2 },
    ACME,
    '/v1/completions',
  );
  assert.equal(res.status, 200);
  const body = (await res.json()) as { object: string; usage: { prompt_tokens: number } };
  assert.equal(body.object, 'text_completion');
  assert.equal(body.usage.prompt_tokens, 3);
  const viaClient = await gw.client.completions.create({
    model: MODEL,
    prompt: [1, 2, 3],
    max_tokens: 2,
  });
  assert.equal(viaClient.usage?.prompt_tokens, 3);
  assert.equal(viaClient.choices.length, 1);
});

for (const prompt of [
  [[1], [2]],
  ['a', 'b'],
]) {
  test(`/v1/completions with a batch prompt ${JSON.stringify(prompt)} → 400`, async () => {
    const res = await post({ model: MODEL, prompt, max_tokens: 2 }, ACME, '/v1/completions');
    assert.equal(res.status, 400);
    assert.ok(res.headers.get('x-goodput-request-id'));
    const e = await errorOf(res);
    assert.equal(e.param, 'prompt');
    assert.match(e.message, /^prompt: expected one prompt/);
  });
}

test('/v1/models needs a key when keys are configured', async () => {
  for (const headers of [{}, { authorization: 'Bearer sk-nope' }, { authorization: 'sk-acme' }]) {
    const res = await send('/v1/models', { headers });
    assert.equal(res.status, 401);
    assert.equal((await errorOf(res)).code, 'invalid_api_key');
  }
  const res = await send('/v1/models', { headers: ACME });
  assert.equal(res.status, 200);
  const list = (await res.json()) as { data: { id: string }[] };
  assert.deepEqual(
    list.data.map((m) => m.id),
    [MODEL],
  );
  assert.deepEqual(
    (await gw.client.models.list()).data.map((m) => m.id),
    [MODEL],
  );
});

// ---- a client's deadline passing mid-generation ----------------------------------------------

/**
 * 10 s of generation on the kit's 2 ms steps (the engines' replies run to their cap), with a
 * 1 s deadline. Admission judges a client's deadline at the class's p50 output (the prior's
 * 128 tokens here: nothing says this reply is long), so it admits; at 300 ms it would refuse it
 * up front (503 `deadline`).
 */
const LONG = { max_tokens: 5000 };
const DEADLINE_MS = 1_000;
const TIMEOUT = { ...ACME, 'x-goodput-timeout-ms': String(DEADLINE_MS) };
const EXPIRED = { outcome: 'expire', reason: 'deadline_exceeded' };

test('a deadline passing mid-generation, not streamed: 504 deadline_exceeded, no Retry-After, recorded as an expiry', async () => {
  const before = await metricValue(gw.url, 'goodput_admission_decisions_total', EXPIRED);
  const t0 = performance.now();
  const res = await post(chat(LONG), TIMEOUT);
  const took = performance.now() - t0;
  assert.equal(res.status, 504);
  assert.equal(res.headers.get('x-goodput-reason'), 'deadline_exceeded');
  assert.equal(res.headers.get('retry-after'), null);
  assert.equal(res.headers.get('x-should-retry'), 'false', 'no retry can succeed');
  const e = await errorOf(res);
  assert.equal(e.code, 'deadline_exceeded');
  assert.ok(
    took >= DEADLINE_MS - 10 && took < DEADLINE_MS + 2_000,
    `cut at its deadline: ${took} ms`,
  );
  assert.deepEqual((await recorded(res)).slice(0, 2), ['expire', 'deadline_exceeded']);
  assert.equal(await metricValue(gw.url, 'goodput_admission_decisions_total', EXPIRED), before + 1);
  assert.deepEqual(await aftermath(gw.url, ACME), { chat: 200, readyz: 200, breakersOpen: 0 });
});

test('a deadline passing mid-stream: an SSE error event deadline_exceeded, then [DONE]', async () => {
  const before = await metricValue(gw.url, 'goodput_admission_decisions_total', EXPIRED);
  const res = await post(chat({ ...LONG, stream: true }), TIMEOUT);
  assert.equal(res.status, 200);
  const text = await res.text();
  assert.match(text.slice(0, 2_000), /"content":/, 'tokens went out first');
  // Its end only: a failure would print a stream of up to 5,000 tokens.
  assert.match(
    text.slice(-400),
    /data: \{"error":\{"message":"[^"]*deadline[^"]*","type":"server_error","param":null,"code":"deadline_exceeded"\}\}\n\ndata: \[DONE\]\n\n$/,
  );
  assert.ok(!/"finish_reason":"(stop|length)"/.test(text), 'no finish: the stream was cut');
  assert.deepEqual((await recorded(res)).slice(0, 2), ['expire', 'deadline_exceeded']);
  assert.equal(await metricValue(gw.url, 'goodput_admission_decisions_total', EXPIRED), before + 1);
});

test('a deadline passing mid-stream, through the openai client: the stream throws an APIError', async () => {
  const stream = await gw.client.chat.completions.create(
    {
      model: MODEL,
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: LONG.max_tokens,
      stream: true,
    },
    { headers: { 'x-goodput-timeout-ms': String(DEADLINE_MS) } },
  );
  let chunks = 0;
  await assert.rejects(
    async () => {
      for await (const _ of stream) chunks++;
    },
    (e: unknown) => {
      assert.ok(e instanceof APIError, String(e));
      assert.equal((e.error as { code?: string } | undefined)?.code, 'deadline_exceeded');
      return true;
    },
  );
  assert.ok(chunks > 0, 'tokens came before the error');
});

test("a deadline inside admission's margin: 504 deadline_exceeded before the body is read, recorded and counted", async () => {
  const labels = { outcome: 'reject', reason: 'deadline_exceeded' };
  const before = {
    offered: await metricValue(gw.url, 'goodput_offered_requests_total', { tenant: 'acme' }),
    decisions: await metricValue(gw.url, 'goodput_admission_decisions_total', labels),
  };
  // 20 ms is inside the policy's 50 ms margin: no prediction could pass. The body is not even
  // JSON, and a body over a socket's buffers is let go by with the connection kept.
  const near = { ...ACME, 'x-goodput-timeout-ms': '20' };
  for (const body of ['{"model": ', JSON.stringify(chat({ user: 'u'.repeat(512 * 1024) }))]) {
    const res = await post(body, near);
    assert.equal(res.status, 504);
    assert.equal(res.headers.get('x-goodput-reason'), 'deadline_exceeded');
    assert.equal(res.headers.get('retry-after'), null);
    assert.equal(res.headers.get('x-should-retry'), 'false', 'no retry can succeed');
    assert.match((await errorOf(res)).message, /too near for any answer/);
    assert.deepEqual(await recorded(res), ['reject', 'deadline_exceeded', 504, 'acme']);
  }
  assert.equal(
    await metricValue(gw.url, 'goodput_offered_requests_total', { tenant: 'acme' }),
    before.offered + 2,
  );
  assert.equal(
    await metricValue(gw.url, 'goodput_admission_decisions_total', labels),
    before.decisions + 2,
  );
  // With an Idempotency-Key the door may hold an earlier attempt's answer: the body is read.
  const keyed = await post('{"model": ', { ...near, 'idempotency-key': 'near-1' });
  assert.equal(keyed.status, 400);
  assert.deepEqual(await aftermath(gw.url, ACME), { chat: 200, readyz: 200, breakersOpen: 0 });
});

test('a refusal no retry can undo says so, and the openai client, retries on, sends one attempt', async () => {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-acme', maxRetries: 2 });
  const offered = () => metricValue(gw.url, 'goodput_offered_requests_total', { tenant: 'acme' });
  const ask = (timeoutMs: number) =>
    client.chat.completions
      .create(
        { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: LONG.max_tokens },
        { headers: { 'x-goodput-timeout-ms': String(timeoutMs) } },
      )
      .then(
        () => assert.fail('refused'),
        (e: unknown) => {
          assert.ok(e instanceof APIError, String(e));
          return e;
        },
      );
  // 300 ms cannot hold the class's p50 output, so the deadline gate refuses it (503 `deadline`),
  // and the soonest it would say to come back (`retry_after.min_ms`, 500 ms) is past that
  // deadline: final, with no Retry-After. 20 ms is inside admission's margin: 504, unread.
  for (const [timeoutMs, status, reason] of [
    [300, 503, 'deadline'],
    [20, 504, 'deadline_exceeded'],
  ] as const) {
    const before = await offered();
    const e = await ask(timeoutMs);
    assert.equal(e.status, status);
    assert.equal(e.headers?.get('x-goodput-reason'), reason);
    assert.equal(e.headers?.get('x-should-retry'), 'false');
    assert.equal(e.headers?.get('retry-after'), null);
    assert.equal(e.headers?.get('retry-after-ms'), null);
    assert.equal(await offered(), before + 1, `${reason}: one attempt, not three`);
  }
});

test('a deadline that passes while the body still uploads: 504 then, not when the upload ends', async () => {
  const labels = { outcome: 'reject', reason: 'deadline_exceeded' };
  const before = await metricValue(gw.url, 'goodput_admission_decisions_total', labels);
  const body = JSON.stringify(chat());
  let finished = false;
  const res = await new Promise<Response>((resolve, reject) => {
    const req = request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        ...ACME,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'x-goodput-timeout-ms': '300',
      },
    });
    req.on('response', (m) => {
      const chunks: Buffer[] = [];
      m.on('data', (c: Buffer) => chunks.push(c));
      m.on('end', () => {
        const headers = new Headers();
        for (const [k, v] of Object.entries(m.headers))
          if (typeof v === 'string') headers.set(k, v);
        resolve(new Response(Buffer.concat(chunks), { status: m.statusCode, headers }));
        req.end(body.slice(10));
      });
    });
    req.on('error', reject);
    // Half the body, then nothing until the answer (or, were the gateway to wait, 20 s).
    req.write(body.slice(0, 10));
    setTimeout(() => {
      if (req.writableEnded) return;
      finished = true;
      req.end(body.slice(10));
    }, 20_000).unref();
  });
  assert.equal(finished, false, 'answered while the body was still uploading');
  assert.equal(res.status, 504);
  assert.equal(res.headers.get('retry-after'), null);
  assert.equal(res.headers.get('x-should-retry'), 'false', 'no retry can succeed');
  assert.deepEqual(await recorded(res), ['reject', 'deadline_exceeded', 504, 'acme']);
  assert.equal(await metricValue(gw.url, 'goodput_admission_decisions_total', labels), before + 1);
  assert.deepEqual(await aftermath(gw.url, ACME), { chat: 200, readyz: 200, breakersOpen: 0 });
});

// ---- every refusal counted and findable ---------------------------------------------------------

test('a 400, a 401 and a 429 at the door: each named, recorded under its id and counted', async () => {
  const invalid = (reason: string) =>
    metricValue(gw.url, 'goodput_invalid_requests_total', { reason });
  const door = { reason: 'tenant_concurrency' };
  const soloLabels = { class: 'interactive', tenant: 'solo' };
  const before = {
    invalid: await invalid('invalid_request'),
    unauthenticated: await invalid('unauthenticated'),
    offered: await metricValue(gw.url, 'goodput_offered_requests_total', { tenant: 'solo' }),
    decisions: await metricValue(gw.url, 'goodput_admission_decisions_total', door),
    shared: await metricValue(gw.url, 'goodput_shared_refusals_total', { ...door, ...soloLabels }),
  };

  assert.deepEqual(await recorded(await post(chat({ max_tokens: 'ten' }))), [
    'reject',
    'invalid_request',
    400,
    'acme',
  ]);
  assert.deepEqual(await recorded(await post(chat(), {})), [
    'reject',
    'unauthenticated',
    401,
    null,
  ]);
  const stream = await soloStream();
  const refused = await post(chat(), SOLO);
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get('x-goodput-reason'), 'tenant_concurrency');
  assert.ok(Number(refused.headers.get('retry-after')) >= 1);
  assert.equal((await errorOf(refused)).code, 'tenant_concurrency');
  assert.deepEqual(await recorded(refused), ['reject', 'tenant_concurrency', 429, 'solo']);
  await stream.text();

  assert.equal(await invalid('invalid_request'), before.invalid + 1);
  assert.equal(await invalid('unauthenticated'), before.unauthenticated + 1);
  // The stream and the refusal were both offered.
  assert.equal(
    await metricValue(gw.url, 'goodput_offered_requests_total', { tenant: 'solo' }),
    before.offered + 2,
  );
  assert.equal(
    await metricValue(gw.url, 'goodput_admission_decisions_total', door),
    before.decisions + 1,
  );
  assert.equal(
    await metricValue(gw.url, 'goodput_shared_refusals_total', { ...door, ...soloLabels }),
    before.shared + 1,
  );
});

/** `bytes` sent as they are on a new connection, read until the gateway closes it: each answer. */
function rawHttp(bytes: string): Promise<Response[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(gw.url).port), '127.0.0.1');
    const parts: Buffer[] = [];
    socket.on('data', (d: Buffer) => parts.push(d));
    socket.on('error', reject);
    socket.on('close', () => {
      let text = Buffer.concat(parts).toString('latin1');
      const answers: Response[] = [];
      while (text.startsWith('HTTP/1.1 ')) {
        const end = text.indexOf('\r\n\r\n');
        const [status, ...lines] = text.slice(0, end).split('\r\n');
        const headers = new Headers(
          lines.map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()]),
        );
        const length = Number(headers.get('content-length'));
        const code = Number(status.split(' ')[1]);
        statuses.push(code);
        answers.push(
          new Response(text.slice(end + 4, end + 4 + length), { status: code, headers }),
        );
        text = text.slice(end + 4 + length);
      }
      resolve(answers);
    });
    socket.write(bytes);
  });
}

const head = (lines: string[], body = '') =>
  `${lines.join('\r\n')}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

test('requests that are not HTTP a route can take: named, recorded, counted, in OpenAI’s shape', async () => {
  const invalid = (reason: string) =>
    metricValue(gw.url, 'goodput_invalid_requests_total', { reason });
  const chats = () => metricValue(gw.url, 'goodput_api_requests_total', { endpoint: 'chat' });
  const answered = (status: string) =>
    metricValue(gw.url, 'goodput_api_answers_total', { endpoint: 'chat', status });
  const before = {
    invalid: await invalid('invalid_request'),
    method: await invalid('method_not_allowed'),
    chats: await chats(),
    bare: await answered('400'),
    expect: await answered('417'),
  };
  const cases: [name: string, bytes: string, status: number, reason: string, message: RegExp][] = [
    [
      'a header name with a space',
      head(['POST /v1/chat/completions HTTP/1.1', 'host: x', 'bad header: v']),
      400,
      'invalid_request',
      /^the request is not valid HTTP: Invalid header token \(HPE_INVALID_HEADER_TOKEN\)$/,
    ],
    [
      'HTTP/1.1 without Host',
      head(['POST /v1/chat/completions HTTP/1.1', 'connection: close'], '{}'),
      400,
      'invalid_request',
      /^host: expected a Host header \(HTTP\/1\.1\), got none$/,
    ],
    [
      'an Expect other than 100-continue',
      head(
        ['POST /v1/chat/completions HTTP/1.1', 'host: x', 'expect: teapot', 'connection: close'],
        '{}',
      ),
      417,
      'invalid_request',
      /^expect: expected 100-continue or no Expect header, got "teapot"$/,
    ],
    [
      'OPTIONS *',
      head(['OPTIONS * HTTP/1.1', 'host: x', 'connection: close']),
      400,
      'invalid_request',
      /^the request target is not valid: /,
    ],
    [
      'CONNECT',
      'CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\r\n',
      405,
      'method_not_allowed',
      /^CONNECT: method not allowed/,
    ],
  ];
  for (const [name, bytes, status, reason, message] of cases) {
    const [answer] = await rawHttp(bytes);
    assert.equal(answer.status, status, name);
    assert.equal(answer.headers.get('x-goodput-reason'), reason, name);
    assert.match((await errorOf(answer.clone())).message, message, name);
    assert.deepEqual(await recorded(answer), ['reject', reason, status, null], name);
  }
  assert.equal(await invalid('invalid_request'), before.invalid + 4);
  assert.equal(await invalid('method_not_allowed'), before.method + 1);
  // A head refused for the chat endpoint is its request and answer, as a 413 is: the one
  // without Host and the 417 (the unparsable one names no endpoint).
  assert.equal(await chats(), before.chats + 2);
  assert.equal(await answered('400'), before.bare + 1);
  assert.equal(await answered('417'), before.expect + 1);
  // HTTP/1.0 may leave Host out.
  const [health] = await rawHttp('GET /healthz HTTP/1.0\r\n\r\n');
  assert.equal(health.status, 200);
});

test('a request followed by bytes that are not HTTP: its own answer first, then the 400', async () => {
  const body = JSON.stringify(chat());
  const request = head(
    [
      'POST /v1/chat/completions HTTP/1.1',
      'host: x',
      'content-type: application/json',
      `authorization: ${ACME.authorization}`,
    ],
    body,
  );
  const answers = await rawHttp(`${request}GARBAGE\r\n\r\n`);
  assert.deepEqual(
    answers.map((a) => a.status),
    [200, 400],
  );
  assert.equal(((await answers[0].json()) as { object: string }).object, 'chat.completion');
  assert.deepEqual(await recorded(answers[1]), ['reject', 'invalid_request', 400, null]);
});

test('a body not declared JSON is a 415 naming content-type; Bearer is read in any case', async () => {
  const res = await post(JSON.stringify(chat()), { ...ACME, 'content-type': 'text/plain' });
  assert.equal(res.status, 415);
  const e = await errorOf(res.clone());
  assert.equal(e.message, 'content-type: expected application/json, got "text/plain"');
  assert.deepEqual(await recorded(res), ['reject', 'invalid_request', 415, 'acme']);
  const typed = await post(chat(), { ...ACME, 'content-type': 'application/json; charset=utf-8' });
  assert.equal(typed.status, 200);
  await typed.text();
  const lower = await post(chat(), { authorization: 'bearer sk-acme' });
  assert.equal(lower.status, 200);
  await lower.text();
});

test('admin refusals are named and recorded; the autoscale body is strict and bounded', async () => {
  const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
  const put = (body: string, headers: Record<string, string> = admin) =>
    send('/admin/autoscale', { method: 'PUT', headers, body });
  assert.deepEqual(await recorded(await send('/admin/decisions/x')), [
    'reject',
    'unauthenticated',
    401,
    null,
  ]);
  assert.deepEqual(await recorded(await put('{"frozen":true}', {})), [
    'reject',
    'unauthenticated',
    401,
    null,
  ]);
  const unknown = await put('{"frozen":false,"x":1}');
  assert.equal(unknown.status, 400);
  const e = await errorOf(unknown.clone());
  assert.deepEqual([e.message, e.param], ['x: unknown field (expected only "frozen")', 'x']);
  assert.deepEqual(await recorded(unknown), ['reject', 'invalid_request', 400, null]);
  const large = await put(JSON.stringify({ frozen: false, pad: 'x'.repeat(4096) }));
  assert.equal(large.status, 413);
  assert.deepEqual(await recorded(large), ['reject', 'payload_too_large', 413, null]);
});

test('no answer in this file was a 500, no timer overflowed, and the gateway serves on', async () => {
  assert.ok(!statuses.includes(500), JSON.stringify(statuses));
  assert.deepEqual(
    warnings.filter((w) => w === 'TimeoutOverflowWarning'),
    [],
  );
  assert.deepEqual(await aftermath(gw.url, ACME), { chat: 200, readyz: 200, breakersOpen: 0 });
});
