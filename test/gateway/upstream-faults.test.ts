// Backends that misbehave, over real HTTP, and what the gateway makes of them: an error a
// backend tells in its stream with a 4xx is the request's (no retry, no breaker), a usage no
// request could have is held to the context, a retry refused after its backend failed is that
// failure, `[DONE]` ends a stream whatever follows, keep-alive comments are not progress, a
// `/metrics` that trickles its head is given up on, and a server's 5xx to `/tokenize` is a 502.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { HttpBackend } from '../../src/gateway/http-backend.ts';
import { isUpstreamError } from '../../src/gateway/backend.ts';
import { wallClock } from '../../src/runtime/wall-clock.ts';
import { wallTimers } from '../../src/runtime/wall-timers.ts';
import { MODEL, gateway, onTeardown, policyWith, postChat, until } from './gateway-kit.ts';

type Mode = (res: import('node:http').ServerResponse, body: { model: string }, id: string) => void;

const event = (o: object) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-x', model: MODEL, ...o })}\n\n`;
const delta = (content: string, finish: string | null = null) =>
  event({ choices: [{ index: 0, delta: { content }, finish_reason: finish }] });
const usage = (prompt: number, completion: number) =>
  event({
    choices: [],
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
    },
  });

/** A vLLM whose chats do what the last message's `MODE:name` picks; `hits` counts them. */
async function scriptedVllm(modes: Record<string, Mode>) {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (b: Buffer) => parts.push(b));
    req.on('end', () => {
      if (req.url === '/metrics') {
        return void res.end('vllm:num_requests_running 0\nvllm:num_requests_waiting 0\n');
      }
      if (req.url === '/v1/models') {
        return void res.end(JSON.stringify({ data: [{ id: MODEL, object: 'model' }] }));
      }
      if (req.url === '/tokenize') {
        hits.push('tokenize');
        res.writeHead(500, { 'content-type': 'text/html' });
        return void res.end('<html>Internal Server Error at 10.0.0.7</html>');
      }
      const body = JSON.parse(Buffer.concat(parts).toString()) as {
        model: string;
        messages: { content: string }[];
      };
      const mode = /MODE:(\w+)/.exec(body.messages.at(-1)?.content ?? '')?.[1] ?? 'ok';
      hits.push(mode);
      // Busy: a 503 with when to come back.
      if (mode === 'busy') {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '7' });
        return void res.end('{"error":{"message":"the engine is loading"}}');
      }
      // Busy behind a proxy that says when as a date, against its own clock.
      if (mode === 'busyUntil') {
        res.writeHead(503, {
          date: 'Mon, 07 Dec 2026 12:00:00 GMT',
          'retry-after': 'Mon, 07 Dec 2026 12:00:20 GMT',
        });
        return void res.end('{"error":{"message":"the engine is loading"}}');
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      modes[mode](res, body, String(req.headers['x-request-id']));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onTeardown(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

const ok: Mode = (res) =>
  res.end(delta('a') + delta('b', 'stop') + usage(9, 2) + 'data: [DONE]\n\n');

const ask = (mode: string, more: Record<string, unknown> = {}, headers = {}) =>
  ({
    messages: [{ role: 'user', content: `MODE:${mode}` }],
    max_tokens: 8,
    ...more,
    headers,
  }) as const;

async function chat(url: string, mode: string, more: Record<string, unknown> = {}, headers = {}) {
  const { headers: h, ...body } = ask(mode, more, headers);
  const res = await postChat(url, body, h);
  return { status: res.status, body: await res.text(), res };
}

test("an error a backend tells in its stream with a 4xx is the request's: no retry, no breaker, the backend's words", async () => {
  const vllmError = event({
    error: { message: 'prompt too long for this adapter', type: 'BadRequestError', code: 400 },
  });
  const flat = `data: ${JSON.stringify({ object: 'error', message: 'bad logits processor', type: 'BadRequestError', code: 400 })}\n\n`;
  const modes = {
    ok,
    nested: ((res) => res.end(vllmError + 'data: [DONE]\n\n')) as Mode,
    flat: ((res) => res.end(flat + 'data: [DONE]\n\n')) as Mode,
  };
  const [a, b] = [await scriptedVllm(modes), await scriptedVllm(modes)];
  const gw = await gateway([a, b]);
  for (let i = 0; i < 4; i++) {
    const nested = await chat(gw.url, 'nested');
    assert.equal(nested.status, 400, nested.body);
    assert.match(nested.body, /prompt too long for this adapter/);
    const plain = await chat(gw.url, 'flat', { stream: true });
    assert.equal(plain.status, 400, plain.body);
    assert.match(plain.body, /bad logits processor/);
  }
  // Each went to one backend only, and no breaker opened: both still serve.
  assert.equal(a.hits.length + b.hits.length, 8);
  for (let i = 0; i < 4; i++) assert.equal((await chat(gw.url, 'ok')).status, 200);
  assert.ok(a.hits.includes('ok') && b.hits.includes('ok'), 'both backends still take requests');
});

test("a usage no request could have is held to the context: one bogus count does not spend its tenant's quota", async () => {
  const modes = {
    ok,
    bogus: ((res) =>
      res.end(delta('a') + delta('b', 'stop') + usage(5e9, 5e9) + 'data: [DONE]\n\n')) as Mode,
  };
  const policy = policyWith({
    tenants: { default: { quotas: { window_ms: 3_600_000, tokens_per_window: 100_000 } } },
  });
  const gw = await gateway([await scriptedVllm(modes)], policy);
  assert.equal((await chat(gw.url, 'bogus', { max_tokens: undefined })).status, 200);
  // Charged at most a context's worth each way (2 × 8,192): the quota holds the next.
  const next = await chat(gw.url, 'ok');
  assert.equal(next.status, 200, next.body);
  const tokens = Number(next.res.headers.get('x-ratelimit-remaining-tokens'));
  assert.ok(tokens > 100_000 - 3 * 8_192, `remaining ${tokens}`);
});

test('a backend that fails past the first-token budget: its client hears the failure, not a deadline refusal', async () => {
  const slow500: Mode = (res) => {
    const later = setTimeout(() => {
      res.destroy();
    }, 2_200);
    res.once('close', () => clearTimeout(later));
  };
  const gw = await gateway([await scriptedVllm({ slow500 }), await scriptedVllm({ slow500 })]);
  const failed = await chat(gw.url, 'slow500');
  // The retry, past interactive's 2 s to a first token, is refused; the answer is the failure.
  assert.equal(failed.status, 502, failed.body);
  assert.match(failed.body, /"code":"upstream_error"/);
});

test("backends that say when to come back: the client is told their Retry-After, not a second's", async () => {
  const [a, b] = [await scriptedVllm({ ok }), await scriptedVllm({ ok })];
  const gw = await gateway([a, b]);
  const busy = await chat(gw.url, 'busy');
  assert.equal(busy.status, 502, busy.body);
  assert.equal(busy.res.headers.get('retry-after'), '7');
  assert.deepEqual([...a.hits, ...b.hits], ['busy', 'busy'], 'tried on each backend once');
  // An HTTP-date is read against the backend's own Date, not this machine's clock.
  const until = await chat(gw.url, 'busyUntil');
  assert.equal(until.status, 502, until.body);
  assert.equal(until.res.headers.get('retry-after'), '20');
});

test('[DONE] ends a stream: what a backend sends after it, or its silence, is not the answer', async () => {
  const modes = {
    hang: ((res) =>
      res.write(delta('a') + delta('b', 'stop') + usage(9, 2) + 'data: [DONE]\n\n')) as Mode,
    more: ((res) =>
      res.end(
        delta('a', 'stop') + 'data: [DONE]\n\n' + delta('late') + 'data: [DONE]\n\n',
      )) as Mode,
  };
  const gw = await gateway([await scriptedVllm(modes)]);
  const started = Date.now();
  const hung = await chat(gw.url, 'hang', { stream: true });
  assert.equal(hung.status, 200);
  assert.match(hung.body, /data: \[DONE\]/);
  assert.ok(Date.now() - started < 5_000, 'answered at [DONE], not when the connection gave up');
  const more = await chat(gw.url, 'more');
  assert.equal(more.status, 200);
  const answer = JSON.parse(more.body) as { choices: { message: { content: string } }[] };
  assert.equal(answer.choices[0].message.content, 'a');
});

test('a stream of [DONE] alone is no answer: the backend failed, not an empty completion', async () => {
  const modes = { empty: ((res) => res.end('data: [DONE]\n\n')) as Mode };
  const gw = await gateway([await scriptedVllm(modes)]);
  for (const stream of [false, true]) {
    const empty = await chat(gw.url, 'empty', { stream });
    assert.equal(empty.status, 502, empty.body);
    assert.match(empty.body, /upstream_error/);
  }
});

test('a token that is not UTF-8 reaches a streaming client replaced, never as raw bytes', async () => {
  // Named as the gateway names the request: its token chunks go on the fast path, as bytes.
  const badUtf8: Mode = (res, _, id) => {
    const own = (frame: string) => frame.replace('chatcmpl-x', `chatcmpl-${id}`);
    const raw = Buffer.from(own(delta('XY')));
    const at = raw.indexOf('XY');
    raw[at] = 0xff;
    raw[at + 1] = 0xfe;
    res.write(own(delta('a')));
    // Each its own read, as a token frame on the fast path is.
    setTimeout(() => {
      res.write(raw);
      setTimeout(() => res.end(own(delta('', 'stop')) + 'data: [DONE]\n\n'), 20);
    }, 20);
  };
  const gw = await gateway([await scriptedVllm({ badUtf8 })]);
  const res = await postChat(gw.url, { ...ask('badUtf8'), headers: undefined, stream: true });
  const bytes = Buffer.from(await res.arrayBuffer());
  assert.equal(res.status, 200);
  assert.equal(bytes.indexOf(Buffer.from([0xff, 0xfe])), -1, 'no raw invalid bytes');
  assert.match(bytes.toString('utf8'), /\\ufffd|\ufffd/);
});

test('keep-alive comments are not progress: a stream with no event for the idle time fails', async () => {
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(delta('a'));
    const ping = setInterval(() => res.write(': ping\n\n'), 50);
    res.once('close', () => clearInterval(ping));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onTeardown(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const backend = new HttpBackend({
    name: 'pinging',
    url,
    clock: wallClock,
    timers: wallTimers(),
    upstreamIdleMs: 400,
  });
  onTeardown(() => backend.close());
  const tokens: string[] = [];
  const call = {
    id: 'r1',
    kind: 'chat' as const,
    body: { model: MODEL, messages: [] },
    signal: new AbortController().signal,
  };
  const started = Date.now();
  const err = await backend
    .stream(call, (t) => tokens.push(t.text))
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  assert.ok(isUpstreamError(err), String(err));
  assert.match(err.message, /no event for 400 ms/);
  assert.deepEqual(tokens, ['a']);
  assert.ok(Date.now() - started < 3_000);
});

test('a /metrics that trickles its head is given up on: the backend is not ready, and is again once it answers', async () => {
  let trickle = true;
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.once('data', () => {
      if (!trickle) {
        const body = 'vllm:num_requests_running 0\nvllm:num_requests_waiting 0\n';
        socket.end(
          `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
        );
        return;
      }
      const head = 'HTTP/1.1 200 OK\r\nx-slow: ' + 'a'.repeat(1_000);
      let i = 0;
      const drip = setInterval(() => {
        if (socket.destroyed || i >= head.length) return clearInterval(drip);
        socket.write(head[i++]);
      }, 100);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onTeardown(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((r) => server.close(() => r()));
  });
  const backend = new HttpBackend({
    name: 'trickling',
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    clock: wallClock,
    timers: wallTimers(),
    scrapeIntervalMs: 50,
    staleAfterMs: 500,
  });
  onTeardown(() => backend.close());
  await until(() => /no answer within 2000 ms/.test(backend.load().why ?? ''), 1_500);
  assert.equal(backend.load().ready, false);
  trickle = false;
  await until(() => backend.load().ready, 1_500);
});

test("a server's 5xx to /tokenize is the gateway's 502, its words logged, not passed on", async () => {
  const vllm = await scriptedVllm({ ok });
  const gw = await gateway([vllm]);
  const res = await fetch(`${gw.url}/tokenize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, prompt: 'hello world' }),
  });
  assert.equal(res.status, 502);
  const text = await res.text();
  assert.match(text, /"code":"upstream_error"/);
  assert.doesNotMatch(text, /10\.0\.0\.7/);
  assert.deepEqual(vllm.hits, ['tokenize']);
});
