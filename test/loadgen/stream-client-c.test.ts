// bench/stream-client.c, the C streaming client of the live overload bench, against a real
// server that answers in each way a gateway does: a chunked SSE stream whose tokens arrive in
// separate writes (and one split across two), a refusal with its code and Retry-After, a shed
// that closes the connection, a stream cut mid-way, a stream with an error event. Open loop and
// closed loop; every request ends as one line, and the client reuses kept-alive connections.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { runCClient } from '../../bench/c-client.ts';

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));
const token = (s: string) =>
  `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"${s}"}}]}\n\n`;

let calls = 0;
const bodies: string[] = [];

async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
  let body = '';
  for await (const piece of req) body += String(piece);
  bodies.push(body);
  const mode = req.headers['x-mode'] ?? JSON.parse(body).mode;
  const id = `req-${calls++}`;
  if (mode === 'refuse') {
    res.writeHead(429, {
      'content-type': 'application/json',
      'retry-after': '3',
      'x-goodput-request-id': id,
    });
    res.end(JSON.stringify({ error: { message: 'no', type: 'x', code: 'deadline' } }));
    return;
  }
  if (mode === 'shed') {
    res.writeHead(503, { 'content-type': 'application/json', connection: 'close' });
    res.end(JSON.stringify({ error: { message: 'busy', code: 'gateway_overloaded' } }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'x-goodput-request-id': id });
  // An empty first delta (the role) is no token.
  res.write('data: {"choices":[{"delta":{"role":"assistant","content":""}}]}\n\n');
  for (let i = 0; i < 5; i++) {
    await sleep(20);
    if (i === 2) {
      // One token's event split across two writes, mid-pattern.
      const t = token('two');
      const mid = t.indexOf('"content":"') + 5;
      res.write(t.slice(0, mid));
      await sleep(5);
      res.write(t.slice(mid));
    } else {
      res.write(token(`t${i}`));
    }
    if (mode === 'cut' && i === 2) {
      await sleep(10);
      res.socket?.destroy();
      return;
    }
  }
  if (mode === 'error') res.write('data: {"error":{"message":"engine died"}}\n\n');
  res.end('data: [DONE]\n\n');
}

const server = createServer((req, res) => void answer(req, res));
server.listen(0, '127.0.0.1');
await once(server, 'listening');
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
after(() => server.close());

test('open loop: streams timed token by token, refusals with their code, sheds and cuts', async () => {
  const cases = ['stream', 'refuse', 'shed', 'cut', 'error'];
  // The second request goes out well after the first's ~110 ms stream has ended, on a machine
  // busy with other suites too, so that it finds the first's connection free.
  const outcomes = await Promise.all(
    cases.map((mode) =>
      runCClient(url, JSON.stringify({ mode, stream: true }), { mode: 'open', atMs: [0, 600] }),
    ),
  );
  const [stream, refuse, shed, cut, error] = outcomes;
  for (const o of outcomes) assert.equal(o.length, 2);

  for (const o of stream) {
    assert.equal(o.status, 200);
    assert.equal(o.completed, true);
    assert.equal(o.tokens, 5);
    assert.ok(o.ttftMs !== null && o.ttftMs >= 15, `first token after ~20 ms: ${o.ttftMs}`);
    assert.ok(o.gapP99Ms >= 15 && o.gapP99Ms < 1000, `gaps of ~20 ms: ${o.gapP99Ms}`);
    assert.match(o.requestId ?? '', /^req-\d+$/);
    assert.equal(o.code, null);
  }
  // The second request went out on the first's kept-alive connection.
  assert.deepEqual(
    stream.map((o) => o.reused),
    [false, true],
  );
  assert.ok(stream[0].connectMs !== null && stream[0].connectMs >= 0, 'a new connection is timed');
  assert.equal(stream[1].connectMs, null);

  for (const o of refuse) {
    assert.equal(o.status, 429);
    assert.equal(o.code, 'deadline');
    assert.equal(o.retryAfterS, 3);
    assert.equal(o.tokens, 0);
    assert.equal(o.ttftMs, null);
  }
  assert.deepEqual(
    refuse.map((o) => o.reused),
    [false, true],
  );

  // A shed closes its connection: the next request opens a new one.
  for (const o of shed) {
    assert.equal(o.status, 503);
    assert.equal(o.code, 'gateway_overloaded');
    assert.equal(o.reused, false);
  }

  for (const o of cut) {
    assert.equal(o.status, 200);
    assert.equal(o.completed, false, 'a stream cut before [DONE] is not complete');
    assert.equal(o.tokens, 3);
  }
  for (const o of error) {
    assert.equal(o.completed, false, 'a stream with an error event is not complete');
    assert.equal(o.tokens, 5);
  }
});

test('open loop: a burst of 200 at once, each answered on its own connection', async () => {
  const outcomes = await runCClient(url, JSON.stringify({ mode: 'refuse' }), {
    mode: 'open',
    atMs: new Array<number>(200).fill(0),
  });
  assert.equal(outcomes.length, 200);
  assert.ok(outcomes.every((o) => o.status === 429 && o.code === 'deadline'));
  assert.ok(outcomes.every((o) => o.reused === false));
  assert.equal(new Set(outcomes.map((o) => o.requestId)).size, 200);
});

test('several bodies in turn, each request numbered where its body has the marker', async () => {
  const before = bodies.length;
  const outcomes = await runCClient(
    url,
    [
      JSON.stringify({ mode: 'refuse', prompt: '@@@@@@@@@@ asked' }),
      JSON.stringify({ mode: 'refuse', prompt: 'the same each time' }),
    ],
    { mode: 'open', atMs: [0, 50, 100, 150] },
  );
  const sent = bodies.slice(before).map((b) => JSON.parse(b).prompt as string);
  assert.deepEqual(sent.toSorted(), [
    '0000000000 asked',
    '0000000002 asked',
    'the same each time',
    'the same each time',
  ]);
  assert.deepEqual(outcomes.map((o) => o.body).toSorted(), [0, 0, 1, 1]);
});

test('closed loop: each connection sends again when its answer ends, until the duration', async () => {
  const before = bodies.length;
  const outcomes = await runCClient(url, JSON.stringify({ mode: 'stream' }), {
    mode: 'closed',
    connections: 3,
    durationS: 0.5,
  });
  // Streams of ~100 ms each, three connections, half a second: about 15, and all of them ended.
  assert.ok(outcomes.length >= 9 && outcomes.length <= 18, `${outcomes.length} requests`);
  assert.equal(bodies.length - before, outcomes.length, 'every request sent is accounted for');
  assert.ok(outcomes.every((o) => o.status === 200 && o.completed && o.tokens === 5));
  assert.equal(outcomes.filter((o) => !o.reused).length, 3, 'one new connection each');
});

test('closed loop: connections the server closes are replaced', async () => {
  const outcomes = await runCClient(url, JSON.stringify({ mode: 'shed' }), {
    mode: 'closed',
    connections: 2,
    durationS: 0.3,
  });
  assert.ok(outcomes.length > 4, `${outcomes.length} requests`);
  assert.ok(outcomes.every((o) => o.status === 503 && !o.reused));
});

test('a port where nothing listens: every request ends with status 0', async () => {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const port = (probe.address() as AddressInfo).port;
  probe.close();
  await once(probe, 'close');
  const outcomes = await runCClient(`http://127.0.0.1:${port}`, '{}', {
    mode: 'open',
    atMs: [0, 10],
  });
  assert.deepEqual(
    outcomes.map((o) => o.status),
    [0, 0],
  );
});
