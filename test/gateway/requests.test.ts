// What the gateway refuses and how: each bad request gets the right status and an OpenAI error
// naming the problem; API keys, granted classes, idempotency, and the admin lookup. Nothing
// crashes and no reservation is left behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import { sha256 } from '../../src/gateway/api-keys.ts';
import { MODEL, engines, gateway, policyWith, postChat } from './gateway-kit.ts';

const hex = (k: string) => sha256(k).toString('hex');
const backends = await engines(1);
const gw = await gateway(
  backends,
  policyWith({
    tenants: {
      acme: { api_keys_sha256: [hex('sk-acme')], classes: ['interactive', 'batch'] },
      lowly: { api_keys_sha256: [hex('sk-lowly')], classes: ['batch'] },
    },
  }),
  { adminToken: 'admin-secret' },
);

function post(body: unknown, headers: Record<string, string> = {}, path = '/v1/chat/completions') {
  return fetch(gw.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-acme', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const ok = { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 };

const cases: Array<
  [name: string, body: unknown, headers: Record<string, string>, status: number, match: RegExp]
> = [
  ['malformed JSON', '{"model": ', {}, 400, /JSON/i],
  ['missing messages', { model: MODEL }, {}, 400, /messages/],
  [
    'empty messages',
    { model: MODEL, messages: [] },
    {},
    400,
    /messages: expected a non-empty array/,
  ],
  [
    'a role of the wrong kind',
    { ...ok, messages: [{ role: 'robot', content: 'x' }] },
    {},
    400,
    /messages\[0\]\.role/,
  ],
  ['max_tokens of the wrong type', { ...ok, max_tokens: 'ten' }, {}, 400, /max_tokens/],
  ['negative max_tokens', { ...ok, max_tokens: -5 }, {}, 400, /max_tokens/],
  ['huge max_tokens', { ...ok, max_tokens: 100_000 }, {}, 400, /context/],
  ['unknown model', { ...ok, model: 'gpt-17' }, {}, 404, /gpt-17/],
  [
    'oversized body',
    { ...ok, messages: [{ role: 'user', content: 'x'.repeat(5 * 1024 * 1024) }] },
    {},
    413,
    /request body: expected at most 4194304 bytes/,
  ],
  ['missing API key', ok, { authorization: '' }, 401, /API key/],
  ['bad API key', ok, { authorization: 'Bearer sk-nope' }, 401, /API key/],
  [
    'a class not granted',
    ok,
    { authorization: 'Bearer sk-lowly', 'x-goodput-class': 'interactive' },
    403,
    /not granted/,
  ],
  ['an unknown class', ok, { 'x-goodput-class': 'vip' }, 400, /x-goodput-class/],
  [
    'an invalid idempotency key',
    ok,
    { 'idempotency-key': 'has spaces in it' },
    400,
    /Idempotency-Key/,
  ],
  ['a bad timeout', ok, { 'x-goodput-timeout-ms': '-3' }, 400, /x-goodput-timeout-ms/],
  ['a deadline already passed', ok, { 'x-goodput-deadline-ms': '1000' }, 504, /deadline/],
];

for (const [name, body, headers, status, match] of cases) {
  test(`refused: ${name} → ${status}`, async () => {
    const res = await post(body, headers);
    assert.equal(res.status, status);
    const err = (await res.json()) as { error: { message: string; type: string } };
    assert.match(err.error.message, match);
    assert.equal(typeof err.error.type, 'string');
  });
}

test('a body sent in chunks, without a length, is counted as it comes: 413 past the limit', async () => {
  // node:http on a connection of its own: a body cut short must not spoil a pooled one.
  const chunked = (bytes: number) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-acme' },
      });
      req.once('response', (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.once('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.once('error', reject);
      const text = JSON.stringify({
        ...ok,
        messages: [{ role: 'user', content: 'x'.repeat(bytes) }],
      });
      for (let i = 0; i < text.length; i += 64 * 1024) req.write(text.slice(i, i + 64 * 1024));
      req.end();
    });
  assert.equal((await chunked(10)).status, 200);
  const big = await chunked(5 * 1024 * 1024);
  assert.equal(big.status, 413);
  assert.match(big.body, /request body: expected at most 4194304 bytes/);
});

test('a refused body that keeps coming: 413 with Connection: close, and the gateway stops reading', async () => {
  // The client never stops on its own: only the gateway's FIN ends the upload.
  const upload = (head: string, frame: (piece: Buffer) => Buffer, most: number) =>
    new Promise<{ answer: string; sentBytes: number }>((resolve, reject) => {
      const { port } = new URL(gw.url);
      const socket = connect(Number(port), '127.0.0.1');
      const piece = Buffer.alloc(64 * 1024, 'x');
      let answer = '';
      let sentBytes = 0;
      let ended = false;
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => (answer += d));
      socket.once('end', () => (ended = true));
      socket.once('close', () => resolve({ answer, sentBytes }));
      socket.once('error', reject);
      const pump = () => {
        while (!ended && sentBytes < most) {
          sentBytes += piece.length;
          if (!socket.write(frame(piece))) return void socket.once('drain', pump);
        }
        if (!ended) socket.end();
      };
      socket.write(head, pump);
    });
  const head = (framing: string) =>
    `POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer sk-acme\r\n` +
    `Content-Type: application/json\r\n${framing}\r\n\r\n`;
  const most = 256 * 1024 * 1024;
  for (const { answer, sentBytes } of [
    await upload(
      head('Transfer-Encoding: chunked'),
      (p) => Buffer.concat([Buffer.from(`${p.length.toString(16)}\r\n`), p, Buffer.from('\r\n')]),
      most,
    ),
    await upload(head(`Content-Length: ${most}`), (p) => p, most),
  ]) {
    assert.match(answer, /^HTTP\/1\.1 413 /);
    assert.match(answer, /\r\nconnection: close\r\n/i);
    assert.ok(sentBytes < most, `the gateway closed before the client sent ${most} bytes`);
  }
  assert.equal((await postChat(gw.url, ok, { authorization: 'Bearer sk-acme' })).status, 200);
});

test('requests read together, more than the gateway holds answers for, are each answered in order', async () => {
  // Each request is refused for its own `max_tokens`, so each answer says which it was.
  const { port } = new URL(gw.url);
  const requestText = (n: number) => {
    const body = JSON.stringify({ ...ok, max_tokens: -n });
    return (
      `POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer sk-acme\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
    );
  };
  /** Sends the requests for `ns` at once on one connection; their answers as they came. */
  const exchange = (ns: readonly number[]) =>
    new Promise<{ status: number; id: string; body: string }[]>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1');
      const answers: { status: number; id: string; body: string }[] = [];
      let got = '';
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => {
        got += d;
        for (;;) {
          const headEnd = got.indexOf('\r\n\r\n');
          if (headEnd < 0) break;
          const head = got.slice(0, headEnd);
          const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1]);
          if (got.length < headEnd + 4 + length) break;
          answers.push({
            status: Number(head.slice(9, 12)),
            id: /\r\nx-goodput-request-id: (\S+)/i.exec(head)?.[1] ?? '',
            body: got.slice(headEnd + 4, headEnd + 4 + length),
          });
          got = got.slice(headEnd + 4 + length);
        }
        if (answers.length === ns.length) socket.end(() => resolve(answers));
      });
      socket.once('error', reject);
      socket.write(ns.map(requestText).join(''));
    });
  const ns = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);
  const [pipelined, ...single] = await Promise.all([
    exchange(ns(1, 100)),
    ...ns(101, 100).map((n) => exchange([n])),
  ]);
  const ids = new Set<string>();
  const check = (answers: { status: number; id: string; body: string }[], sent: number[]) => {
    assert.equal(answers.length, sent.length);
    answers.forEach((a, i) => {
      assert.equal(a.status, 400);
      assert.match(a.body, new RegExp(`max_tokens: .*, got -${sent[i]}"`));
      ids.add(a.id);
    });
  };
  check(pipelined, ns(1, 100));
  single.forEach((answers, i) => check(answers, [101 + i]));
  assert.equal(ids.size, 200, 'every answer names a request of its own');
});

test('Expect: 100-continue: a body the gateway would refuse is never asked for; one it reads is', async () => {
  // Sends the head alone and returns what the gateway answers first; `body`, if given, goes
  // once a 100 Continue has come.
  const ask = (length: number, body?: string) =>
    new Promise<string[]>((resolve, reject) => {
      const { port } = new URL(gw.url);
      const socket = connect(Number(port), '127.0.0.1');
      const heads: string[] = [];
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => {
        text += d;
        for (let end = text.indexOf('\r\n\r\n'); end >= 0; end = text.indexOf('\r\n\r\n')) {
          const status = text.slice(0, text.indexOf('\r\n'));
          heads.push(status);
          text = text.slice(end + 4);
          if (status.includes(' 100 ') && body !== undefined) socket.write(body);
          else {
            socket.destroy();
            return resolve(heads);
          }
        }
      });
      socket.once('error', reject);
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer sk-acme\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`,
      );
    });
  assert.deepEqual(await ask(64 * 1024 * 1024), ['HTTP/1.1 413 Payload Too Large']);
  const body = JSON.stringify(ok);
  assert.deepEqual(await ask(Buffer.byteLength(body), body), [
    'HTTP/1.1 100 Continue',
    'HTTP/1.1 200 OK',
  ]);
});

test('after every refusal the gateway is healthy and holds nothing', async () => {
  assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
  const ledger = gw.gateway.pipeline.dispatcher.ledger;
  assert.equal(ledger.decoding, 0);
  assert.equal(
    ledger.replicas.reduce((n, r) => n + r.entries.length, 0),
    0,
  );
  const res = await post(ok);
  assert.equal(res.status, 200, 'and still serves');
});

test('a granted class is served; its decision can be looked up by the admin only', async () => {
  const res = await post(ok, { 'x-goodput-class': 'batch' });
  assert.equal(res.status, 200);
  const id = res.headers.get('x-goodput-request-id');
  assert.ok(id);
  const lookup = (token?: string) =>
    fetch(`${gw.url}/admin/decisions/${id}`, {
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    });
  assert.equal((await lookup()).status, 401);
  assert.equal((await lookup('wrong')).status, 401);
  const rec = (await (await lookup('admin-secret')).json()) as {
    request_id: string;
    class: string;
    tenant: string;
    admission: { result: string };
  };
  assert.equal(rec.request_id, id);
  assert.equal(rec.class, 'batch');
  assert.equal(rec.tenant, 'acme');
  assert.ok(['admit', 'defer'].includes(rec.admission.result));
  assert.ok(!JSON.stringify(rec).includes('hi"'), 'never the prompt');
});

test('outputs that run to their max_tokens teach the length model: the next request is predicted from them', async () => {
  const { minSamples } = gw.gateway.pipeline.policy.estimate;
  const capped = { ...ok, max_tokens: 4, ignore_eos: true };
  const lowly = { authorization: 'Bearer sk-lowly', 'x-goodput-class': 'batch' };
  for (let i = 0; i < minSamples; i++) {
    const res = await post(capped, lowly);
    assert.equal(res.status, 200);
    const body = (await res.json()) as { choices: { finish_reason: string }[] };
    assert.equal(body.choices[0].finish_reason, 'length');
  }
  const res = await post(capped, lowly);
  assert.equal(res.status, 200);
  const rec = (await (
    await fetch(`${gw.url}/admin/decisions/${res.headers.get('x-goodput-request-id')}`, {
      headers: { authorization: 'Bearer admin-secret' },
    })
  ).json()) as { demand: { output_p50: number; output_source: string } };
  // Before, an output cut at its cap taught nothing and the prior stood.
  assert.equal(rec.demand.output_source, 'tenant');
  assert.equal(rec.demand.output_p50, 4);
});

test('a completed answer is replayed for its Idempotency-Key, not executed twice', async () => {
  const first = await post(ok, { 'idempotency-key': 'k-123' });
  const body = await first.text();
  const again = await post(ok, { 'idempotency-key': 'k-123' });
  assert.equal(again.headers.get('x-goodput-replayed'), 'true');
  assert.equal(await again.text(), body);
});

test("a reply that ignores EOS is planned at its whole max_tokens: past its client's deadline on an idle fleet, a final refusal", async () => {
  // 3,000 tokens at 2 ms a step is 6 s: a 3 s deadline cannot be met however long one waits.
  const body = {
    model: MODEL,
    messages: [{ role: 'user', content: 'count' }],
    max_tokens: 3_000,
    ignore_eos: true,
  };
  const res = await post(body, { 'x-goodput-timeout-ms': '3000' });
  const { error } = (await res.json()) as { error: { code: string } };
  assert.equal(res.status, 503);
  assert.equal(error.code, 'deadline');
  assert.equal(res.headers.get('x-should-retry'), 'false', 'no retry can succeed');
  assert.equal(res.headers.get('retry-after'), null);
  assert.equal(res.headers.get('x-goodput-reason'), 'deadline', 'refused at the door, not cut');
  // Without ignore_eos the same cap is a ceiling, not a length: admitted.
  const natural = await post(
    { ...body, ignore_eos: false, max_tokens: 30 },
    {
      'x-goodput-timeout-ms': '3000',
    },
  );
  assert.equal(natural.status, 200, await natural.text());
});
