// vLLM's /tokenize and /detokenize through `goodput serve`: passed to a ready server backend as
// they came, its answer (a 400 too) back as it gave it, each counted by path and status and
// carrying an id; a body that is not JSON refused at the door; the embedded fleet, which has no
// tokenizer, answers a 404 saying so; with no server ready there is none to ask. They are behind
// the API key, and a model the key's tenant may not use is one that does not exist.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import {
  MODEL,
  decisionRecord,
  doorOnlyFleet,
  gateway,
  metricValue,
  policyWith,
  until,
} from './gateway-kit.ts';
import { sha256 } from '../../src/gateway/api-keys.ts';
import { fakeVllm } from './fake-vllm.ts';
import { memoryOpsLog } from '../../src/gateway/ops-log.ts';
import { serverForwarder } from '../../src/gateway/http/server-routes.ts';
import type { Backend } from '../../src/gateway/backend.ts';
import { wallClock } from '../../src/runtime/wall-clock.ts';
import { wallTimers } from '../../src/runtime/wall-timers.ts';

const post = (url: string, path: string, body: string) =>
  fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

test('/tokenize goes to a server backend as it came, and its answer comes back as it gave it', async () => {
  const vllm = await fakeVllm();
  const front = await gateway([vllm]);
  const asked = JSON.stringify({ model: MODEL, prompt: 'three small words' });
  const res = await post(front.url, '/tokenize', asked);
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { count: 3, max_model_len: 8192, tokens: [1, 2, 3] });
  const id = res.headers.get('x-goodput-request-id');
  assert.ok(id);
  assert.deepEqual(vllm.bodies.at(-1), JSON.parse(asked), 'the body as it came');
  // The server's own 400 is the request's: passed on as it was said.
  const refused = await post(front.url, '/tokenize', JSON.stringify({ model: MODEL, prompt: '' }));
  assert.equal(refused.status, 400);
  assert.equal(((await refused.json()) as { message: string }).message, 'empty prompt');
  // Not JSON: refused at the door, the server never asked.
  const sent = vllm.bodies.length;
  const broken = await post(front.url, '/tokenize', '{"model":');
  assert.equal(broken.status, 400);
  assert.match(
    ((await broken.json()) as { error: { message: string } }).error.message,
    /^request body: expected valid JSON/,
  );
  assert.equal(vllm.bodies.length, sent);
  assert.equal(broken.headers.get('x-goodput-reason'), 'invalid_request', 'counted and recorded');
  assert.equal((await fetch(`${front.url}/tokenize`)).status, 405, 'GET: a 405 naming POST');
  const metric = (status: string) =>
    metricValue(front.url, 'goodput_server_requests_total', { path: '/tokenize', status });
  assert.equal(await metric('200'), 1);
  assert.equal(await metric('400'), 2, "the server's 400 and the gateway's");
});

test("a server that fails under the request: the gateway's 502, which tells the client nothing of it", async () => {
  const log = memoryOpsLog();
  const front = await gateway([await fakeVllm()], 'goodput', { log });
  const res = await post(front.url, '/tokenize', JSON.stringify({ model: MODEL, prompt: 'die' }));
  assert.equal(res.status, 502);
  const body = (await res.json()) as { error: { message: string; code: string } };
  assert.deepEqual(body.error.message, 'POST /tokenize: the server failed before it answered');
  const id = res.headers.get('x-goodput-request-id') ?? '';
  const told = log.lines.find((l) => l.msg.includes(id) && /the server failed:/.test(l.msg));
  assert.ok(told !== undefined, 'the cause is in the log, under the request id');
});

test("behind the key, for the key's tenant's models only: the server is not asked otherwise", async () => {
  const vllm = await fakeVllm();
  const hex = (k: string) => sha256(k).toString('hex');
  const policy = policyWith({
    tenants: {
      acme: { api_keys_sha256: [hex('sk-acme')], models: [MODEL] },
      beta: { api_keys_sha256: [hex('sk-beta')] },
    },
  });
  const front = await gateway([vllm], policy, { engine: { loraModules: ['sql-lora'] } });
  const as = (key: string | undefined, model: string) =>
    fetch(`${front.url}/tokenize`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
      },
      body: JSON.stringify({ model, prompt: 'three small words' }),
    });
  const sent = vllm.bodies.length;
  const anonymous = await as(undefined, MODEL);
  assert.equal(anonymous.status, 401);
  assert.equal(anonymous.headers.get('x-goodput-reason'), 'unauthenticated');
  assert.equal((await as('sk-wrong', MODEL)).status, 401);
  const theirs = await as('sk-acme', 'sql-lora');
  assert.equal(theirs.status, 404);
  const { error } = (await theirs.json()) as { error: { message: string; code: string } };
  assert.equal(error.code, 'model_not_found');
  assert.match(error.message, /^model: expected one of llama-3-8b, got "sql-lora"/);
  assert.equal(vllm.bodies.length, sent, 'the server was not asked');
  assert.equal((await as('sk-acme', MODEL)).status, 200);
  assert.equal((await as('sk-beta', 'sql-lora')).status, 200, 'a tenant granted every model');
});

test('the embedded fleet has no tokenizer: a 404 saying so, counted', async () => {
  const embedded = await doorOnlyFleet();
  for (const path of ['/tokenize', '/detokenize']) {
    const res = await post(embedded.url, path, JSON.stringify({ model: MODEL, tokens: [1] }));
    assert.equal(res.status, 404);
    const { error } = (await res.json()) as { error: { message: string } };
    assert.equal(
      error.message,
      `POST ${path}: not served by the simulated fleet, which has no tokenizer`,
    );
    assert.equal(res.headers.get('x-goodput-reason'), 'not_found');
  }
});

test('with no server ready there is none to ask', async () => {
  const down: Backend = {
    name: 'backend-0',
    load: () => ({ ready: false, running: 0, waiting: 0, kvUsage: 0, atMs: 0 }),
    stream: () => Promise.reject(new Error('not asked')),
    close: async () => {},
  };
  const forward = serverForwarder(['http://127.0.0.1:9'], [down], {
    clock: wallClock,
    timers: wallTimers(wallClock),
  });
  assert.equal(await forward('/tokenize', '{}', 'r1'), undefined);
  // Ready, but nothing answers there: the failure is the server's (the route's 502).
  const up = { ...down, load: () => ({ ...down.load(), ready: true }) };
  const refusing = serverForwarder(['http://127.0.0.1:9'], [up], {
    clock: wallClock,
    timers: wallTimers(wallClock),
  });
  await assert.rejects(refusing('/tokenize', '{}', 'r2'), /ECONNREFUSED/);
});

test("a body is read as a completion's is: bounded, declared JSON, unencoded, UTF-8 — or refused, the server not asked", async () => {
  const vllm = await fakeVllm();
  const front = await gateway([vllm]);
  const send = (body: string | Uint8Array, headers: Record<string, string> = {}) =>
    fetch(`${front.url}/tokenize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
  const cases: [string, Promise<Response>, number, RegExp][] = [
    [
      'not UTF-8',
      send(Buffer.from('{"model":"llama-3-8b","prompt":"a\xff\xfeb"}', 'latin1')),
      400,
      /UTF-8/,
    ],
    ['gzip', send('{}', { 'content-encoding': 'gzip' }), 415, /gzip/],
    ['text', send('{}', { 'content-type': 'text/plain' }), 415, /text\/plain/],
    ['too large', send(`{"prompt":"${'a'.repeat(5 * 1024 * 1024)}"}`), 413, /at most/],
  ];
  for (const [what, answer, status, says] of cases) {
    const res = await answer;
    const { error } = (await res.json()) as { error: { message: string; code: string | null } };
    assert.equal(res.status, status, `${what}: ${error.message}`);
    assert.match(error.message, says, what);
    assert.ok(res.headers.get('x-goodput-request-id'), what);
  }
  assert.equal(vllm.bodies.length, 0, 'the server was asked nothing');
  const counted = (status: string) =>
    metricValue(front.url, 'goodput_server_requests_total', { path: '/tokenize', status });
  assert.deepEqual([await counted('400'), await counted('415'), await counted('413')], [1, 2, 1]);
});

test('a client that leaves, mid-upload or while the server works, is a 499: no failure, no fault', async () => {
  const log = memoryOpsLog();
  const front = await gateway([await fakeVllm()], 'goodput', { log });
  const counted = (path: string, status: string) =>
    metricValue(front.url, 'goodput_server_requests_total', { path, status });
  // 9 bytes of the 100 it declared, then gone.
  const { port } = new URL(front.url);
  const socket = connect(Number(port), '127.0.0.1');
  socket.write(
    'POST /detokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      'Content-Length: 100\r\n\r\n{"model":',
  );
  await new Promise((r) => setTimeout(r, 100));
  socket.destroy();
  await until(async () => (await counted('/detokenize', '499')) === 1);
  // Gone while the server takes its time: not the server's failure.
  const leave = new AbortController();
  const asked = fetch(`${front.url}/tokenize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, prompt: 'slow' }),
    signal: leave.signal,
  }).catch(() => undefined);
  await new Promise((r) => setTimeout(r, 200));
  leave.abort();
  await asked;
  await until(async () => (await counted('/tokenize', '499')) === 1);
  assert.equal(await counted('/tokenize', '502'), 0);
  assert.deepEqual(
    log.lines.filter((l) => l.level !== 'info').map((l) => l.msg),
    [],
    'neither a fault nor a server failure logged',
  );
});

test('with its server gone, a 503 recorded under its id, and counted as no invalid request', async () => {
  const vllm = await fakeVllm();
  const front = await gateway([vllm], 'goodput', { adminToken: 'adm' });
  await vllm.stop();
  await until(async () => (await fetch(`${front.url}/readyz`)).status === 503);
  const res = await post(front.url, '/tokenize', JSON.stringify({ model: MODEL, prompt: 'a b' }));
  assert.equal(res.status, 503);
  const id = res.headers.get('x-goodput-request-id') ?? '';
  type Decision = { admission: { reason: string; status: number } };
  const { admission } = await decisionRecord<Decision>(front.url, id, 'adm');
  assert.deepEqual([admission.reason, admission.status], ['no_ready_replica', 503]);
  assert.equal(await metricValue(front.url, 'goodput_invalid_requests_total'), 0);
  assert.equal(
    await metricValue(front.url, 'goodput_server_requests_total', {
      path: '/tokenize',
      status: '503',
    }),
    1,
  );
});
