// HttpBackend against a scripted upstream over real HTTP: which upstream events are forwarded
// byte for byte, which are rebuilt, what the end event reports, that the gateway's request id
// goes upstream, that a body cut mid-stream fails as the upstream's fault after handing on what
// it read, and that a stream's later tokens give way to first tokens read in the same turn.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpBackend } from '../../src/gateway/http-backend.ts';
import { adaptersListed, modelListing } from '../../src/gateway/backend-metrics.ts';
import { engines, gateway, postChat, staleVllm, until } from './gateway-kit.ts';
import { memoryOpsLog } from '../../src/gateway/ops-log.ts';
import { isUpstreamError, type StreamEnd, type TokenEvent } from '../../src/gateway/backend.ts';
import { wallClock } from '../../src/runtime/wall-clock.ts';
import { wallTimers } from '../../src/runtime/wall-timers.ts';

const ID = 'chatcmpl-r1';
const chunk = (o: object) => `data: ${JSON.stringify({ id: ID, model: 'm', ...o })}\r\n\r\n`;
const delta = (content: string, finish: string | null = null) =>
  chunk({ choices: [{ index: 0, delta: { content }, finish_reason: finish }] });

let script: string[] = [];
let cut = false;
/** Between pieces: each reaches the gateway as a read of its own. */
let gapMs = 0;
let seen: IncomingHttpHeaders = {};
/** The pieces of the script the last call wrote before its connection closed. */
let written = 0;
const server = createServer(async (req, res) => {
  seen = req.headers;
  req.resume();
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  written = 0;
  for (const piece of script) {
    if (res.destroyed) return;
    res.write(piece);
    written++;
    if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
  }
  // Cut: once what was written has gone out, the connection drops without the body's end.
  if (cut) res.write('', () => res.socket?.destroy());
  else res.end();
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const backend = new HttpBackend({ name: 'b0', url, clock: wallClock, timers: wallTimers() });
after(async () => {
  await backend.close();
  server.close();
});

async function events(
  body: Record<string, unknown> = { model: 'm', messages: [] },
): Promise<{ tokens: TokenEvent[]; end: StreamEnd }> {
  const tokens: TokenEvent[] = [];
  const call = {
    id: 'r1',
    kind: 'chat' as const,
    body,
    signal: new AbortController().signal,
  };
  const end = await backend.stream(call, (t) => tokens.push(t));
  return { tokens, end };
}

test("plain token events are forwarded as they came; finish, usage and foreign ids are not; the end carries usage and the engine's TTFT parts", async () => {
  const foreign = `data: ${JSON.stringify({ id: 'other', model: 'm', choices: [{ delta: { content: 'c' } }] })}\n\n`;
  script = [
    chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] }),
    delta('a'),
    // An event split across two writes is still one event.
    delta('b').slice(0, 20),
    delta('b').slice(20),
    foreign,
    delta('d', 'length'),
    chunk({
      choices: [],
      usage: { prompt_tokens: 7, completion_tokens: 4 },
      timings: { queue_ms: 1.5, prefill_ms: 0, first_decode_ms: 20 },
    }),
    'data: [DONE]\n\n',
  ];
  cut = false;
  const { tokens, end } = await events();
  assert.equal(seen['x-request-id'], 'r1');
  assert.deepEqual(
    tokens.map((e) => e.text),
    ['a', 'b', 'c', 'd'],
  );
  const sse = (t: TokenEvent) => (t.sse === undefined ? undefined : Buffer.from(t.sse).toString());
  assert.equal(sse(tokens[0]), `data: ${delta('a').slice(6, -4)}\n\n`);
  assert.ok(sse(tokens[1])?.includes('"content":"b"'));
  assert.equal(tokens[2].sse, undefined, 'another id is rebuilt');
  assert.equal(tokens[3].sse, undefined, 'the finishing chunk is rebuilt');
  assert.deepEqual(end, {
    finishReason: 'length',
    promptTokens: 7,
    completionTokens: 4,
    ttftParts: { queueMs: 1.5, prefillMs: 0, firstDecodeMs: 20 },
  });
});

test('token frames read one at a time go out as the bytes read, their text decoded', async () => {
  const frame = (content: string, finish: string | null = null) =>
    `data: ${JSON.stringify({ id: ID, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: finish }] })}\n\n`;
  const texts = ['a', ' b', 'q"uote\\', 'é🙂', '', 'z'];
  script = [...texts.map((t) => frame(t)), frame('', 'stop'), 'data: [DONE]\n\n'];
  cut = false;
  gapMs = 5;
  try {
    const { tokens, end } = await events();
    assert.deepEqual(
      tokens.map((t) => t.text),
      texts.filter((t) => t !== ''),
    );
    assert.deepEqual(
      tokens.map((t) => Buffer.from(t.sse ?? []).toString()),
      texts.filter((t) => t !== '').map((t) => frame(t)),
    );
    assert.equal(end.finishReason, 'stop');
    assert.equal(end.completionTokens, 5);
  } finally {
    gapMs = 0;
  }
});

test('vLLM\'s "usage": null on every chunk reaches only a client that asked for usage', async () => {
  // vLLM writes it on every chunk when usage is asked, and the gateway always asks (to count).
  const vllm = (content: string) =>
    `data: ${JSON.stringify({ id: ID, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }], usage: null })}\n\n`;
  const texts = ['a', ' b', 'q"uote\\', 'é🙂', 'z'];
  const last = [
    `data: ${JSON.stringify({ id: ID, model: 'm', choices: [{ index: 0, delta: { content: '' }, finish_reason: 'stop' }], usage: null })}\n\n`,
    `data: ${JSON.stringify({ id: ID, model: 'm', choices: [], usage: { prompt_tokens: 3, completion_tokens: 5 } })}\n\n`,
    'data: [DONE]\n\n',
  ];
  const frames = async (body: Record<string, unknown>) => {
    const { tokens, end } = await events(body);
    assert.equal(end.completionTokens, 5);
    assert.deepEqual(
      tokens.map((t) => t.text),
      texts,
    );
    return tokens.map((t) => Buffer.from(t.sse ?? []).toString());
  };
  const without = (t: string) => vllm(t).replace(',"usage":null', '');
  const asked = { model: 'm', messages: [], stream_options: { include_usage: true } };
  cut = false;
  // Frames read one at a time (the bytes' own path), then all in one read (the parsed path).
  for (const gap of [5, 0]) {
    gapMs = gap;
    script = [...texts.map(vllm), ...last];
    try {
      assert.deepEqual(
        await frames({ model: 'm', messages: [] }),
        texts.map(without),
        `gap ${gap}`,
      );
      assert.deepEqual(await frames(asked), texts.map(vllm), `gap ${gap}, usage asked`);
    } finally {
      gapMs = 0;
    }
  }
  script = [texts.map(vllm).join('') + last.join('')];
  assert.deepEqual(await frames({ model: 'm', messages: [] }), texts.map(without), 'one read');
});

test('a body cut after tokens is an upstream failure that may not be retried', async () => {
  script = [delta('a'), delta('b')];
  cut = true;
  const err = await events().then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(isUpstreamError(err), String(err));
  assert.equal(err.beforeFirstToken, false);
});

/** The failure the stream ended in (undefined: it ended well). */
async function failure(): Promise<unknown> {
  cut = false;
  return events().then(
    () => undefined,
    (e: unknown) => e,
  );
}

test('an error event, a body with no finish and no [DONE], or no stream at all: upstream failures, not answers', async () => {
  const cases: [name: string, body: string[], beforeFirstToken: boolean, message: RegExp][] = [
    [
      "vLLM's error event after a token",
      [
        delta('a'),
        `data: ${JSON.stringify({ object: 'error', message: 'engine crashed' })}\n\n`,
        'data: [DONE]\n\n',
      ],
      false,
      /sent an error event: .*engine crashed/,
    ],
    [
      "OpenAI's error event first",
      [`data: ${JSON.stringify({ error: { message: 'no' } })}\n\n`],
      true,
      /sent an error event/,
    ],
    [
      'tokens, then the body ends',
      [delta('a'), delta('b')],
      false,
      /ended without a finish reason or \[DONE\]/,
    ],
    ['a JSON error sent with a 200', ['{"error":{"message":"busy"}}'], true, /ended without/],
    ['an empty 200', [], true, /ended without/],
  ];
  for (const [name, body, before, message] of cases) {
    script = body;
    const err = await failure();
    assert.ok(isUpstreamError(err), `${name}: ${String(err)}`);
    assert.equal(err.beforeFirstToken, before, name);
    assert.match(err.message, message, name);
  }
});

test('a backend streaming past max_tokens is cut at the cap: ended as length, its connection closed', async () => {
  const many = Array.from({ length: 200 }, (_, i) => delta(`t${i}`));
  for (const body of [
    { model: 'm', messages: [], max_tokens: 3 },
    { model: 'm', messages: [], max_completion_tokens: 3, max_tokens: 50 },
  ]) {
    script = [...many, delta('', 'stop'), 'data: [DONE]\n\n'];
    cut = false;
    gapMs = 2;
    try {
      const tokens: TokenEvent[] = [];
      const call = { id: 'r1', kind: 'chat' as const, body, signal: new AbortController().signal };
      const end = await backend.stream(call, (t) => tokens.push(t));
      assert.deepEqual(
        tokens.map((t) => t.text),
        ['t0', 't1', 't2'],
      );
      assert.deepEqual(end, {
        finishReason: 'length',
        promptTokens: 0,
        completionTokens: 3,
        ttftParts: undefined,
        pastCap: true,
      });
      // The backend stops generating: its connection closed soon after the cap.
      await new Promise((r) => setTimeout(r, 50));
      assert.ok(written < 100, `the backend wrote ${written} of ${script.length} pieces`);
    } finally {
      gapMs = 0;
    }
  }
  // At the cap exactly, with the finish in the last token's event: a plain end.
  script = [delta('a'), delta('b'), delta('c', 'length'), 'data: [DONE]\n\n'];
  const call = {
    id: 'r1',
    kind: 'chat' as const,
    body: { model: 'm', messages: [], max_tokens: 3 },
    signal: new AbortController().signal,
  };
  const end = await backend.stream(call, () => {});
  assert.equal(end.pastCap, undefined);
  assert.equal(end.completionTokens, 3);
});

test('usage the backend reports is taken only as counts: never negative or past the output cap', async () => {
  const usage = (u: object) => chunk({ choices: [], usage: u });
  const ended = async (u: object, body: Record<string, unknown> = { model: 'm', messages: [] }) => {
    script = [delta('a'), delta('b', 'stop'), usage(u), 'data: [DONE]\n\n'];
    cut = false;
    const call = { id: 'r1', kind: 'chat' as const, body, signal: new AbortController().signal };
    const end = await backend.stream(call, () => {});
    return [end.promptTokens, end.completionTokens];
  };
  assert.deepEqual(await ended({ prompt_tokens: 7, completion_tokens: 2 }), [7, 2]);
  assert.deepEqual(
    await ended({ prompt_tokens: -100, completion_tokens: -5 }),
    [0, 2],
    'negative: ignored',
  );
  assert.deepEqual(
    await ended({ prompt_tokens: 'lots', completion_tokens: 1.5 }),
    [0, 2],
    'not counts',
  );
  assert.deepEqual(
    await ended({ prompt_tokens: 7, completion_tokens: 5000 }, { model: 'm', max_tokens: 16 }),
    [7, 16],
    'never past max_tokens',
  );
});

test("a backend's adapters are its /v1/models entries with a parent, as vLLM lists them", () => {
  const vllm = {
    object: 'list',
    data: [
      { id: 'meta-llama/Llama-3.1-8B', object: 'model', root: '/m', parent: null },
      { id: 'sql-lora', object: 'model', root: '/loras/sql', parent: 'meta-llama/Llama-3.1-8B' },
    ],
  };
  assert.deepEqual(adaptersListed(vllm), ['sql-lora']);
  // Only the base model: it serves no adapter.
  assert.deepEqual(adaptersListed({ data: [vllm.data[0]] }), []);
  // Not a model list, or one that does not speak of parents (servers other than vLLM): nothing
  // is known of its adapters.
  const plain = { data: [{ id: 'llama', object: 'model' }] };
  for (const body of [null, {}, { data: 'x' }, 'text', plain]) {
    assert.equal(adaptersListed(body), undefined);
  }
});

test("a backend's listing: every model's id, and the base model's max_model_len", () => {
  const vllm = {
    data: [
      { id: 'sql-lora', object: 'model', parent: 'meta-llama/Llama-3.1-8B', max_model_len: 1 },
      { id: 'meta-llama/Llama-3.1-8B', object: 'model', parent: null, max_model_len: 131072 },
      { object: 'model' },
    ],
  };
  assert.deepEqual(modelListing(vllm), {
    ids: ['sql-lora', 'meta-llama/Llama-3.1-8B'],
    maxModelLen: 131072,
  });
  // TGI and llama.cpp say no context: the ids alone.
  assert.deepEqual(modelListing({ data: [{ id: 'tgi' }] }), { ids: ['tgi'] });
  assert.deepEqual(modelListing({ data: [{ id: 'x', max_model_len: 'big' }] }), { ids: ['x'] });
  for (const body of [null, {}, { data: 'x' }, 'text']) assert.equal(modelListing(body), undefined);
});

test('a backend that lists another model name, or another context, is logged once, naming the flag; its 404 is its failure', async () => {
  const log = memoryOpsLog();
  const other = await engines(1, { servedModelName: 'meta-llama/Llama-3.1-8B', maxModelLen: 4096 });
  const gw = await gateway(other, 'goodput', { log });
  const said = (re: RegExp) => log.lines.filter((l) => re.test(l.msg));
  await until(() => said(/does not list model/).length > 0 && said(/max_model_len/).length > 0);
  assert.match(
    said(/does not list model/)[0]?.msg ?? '',
    /backend backend-0 does not list model "llama-3-8b" \(it lists meta-llama\/Llama-3\.1-8B\): it will refuse every request; pass --served-model-name/,
  );
  assert.match(
    said(/max_model_len/)[0]?.msg ?? '',
    /serves max_model_len 4096 but the gateway plans with 8192: pass --max-model-len 4096/,
  );
  // The listing is read again every tenth scrape (20 ms apart here): told once all the same.
  await new Promise((r) => setTimeout(r, 600));
  assert.equal(said(/does not list model/).length, 1);
  assert.equal(said(/max_model_len/).length, 1);
  // Its 404 for the gateway's model is the backend's failure, not the client's: the gateway's own
  // 502, which names nothing of the backend.
  const refused = await postChat(gw.url, { max_tokens: 4 });
  assert.equal(refused.status, 502);
  assert.doesNotMatch(await refused.text(), /Llama-3\.1/);
  // A backend that serves what the gateway asks for is not logged.
  const quiet = memoryOpsLog();
  await gateway(await engines(1), 'goodput', { log: quiet });
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(
    quiet.lines.filter((l) => /does not list model|max_model_len/.test(l.msg)),
    [],
  );
});

test('a 404 from a backend has its /v1/models read again at the next scrape: an adapter it unloaded stops being routed there', async () => {
  let listed = ['a'];
  const vllm = await staleVllm('base', () => listed);
  const hits = vllm.hits;
  const b = new HttpBackend({
    name: 'b1',
    url: vllm.url,
    clock: wallClock,
    timers: wallTimers(),
    scrapeIntervalMs: 20,
  });
  try {
    const servable = () => b.load().servable?.join(',');
    for (let i = 0; i < 200 && servable() !== 'a'; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(servable(), 'a');
    listed = [];
    const call = {
      id: 'r2',
      kind: 'chat' as const,
      body: { model: 'a', messages: [] },
      signal: new AbortController().signal,
    };
    await assert.rejects(
      b.stream(call, () => {}),
      (e: unknown) => isUpstreamError(e) && e.status === 404,
    );
    const answered = hits.length;
    for (let i = 0; i < 200 && servable() !== ''; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(servable(), '');
    // Read with the next scrape (or the one after, if one was under way), not at the tenth.
    const after404 = hits.slice(answered);
    const modelsAt = after404.indexOf('/v1/models');
    let scrapes = 0;
    const thirdScrape = after404.findIndex((h) => h === '/metrics' && ++scrapes === 3);
    assert.ok(modelsAt >= 0 && (thirdScrape < 0 || modelsAt < thirdScrape), after404.join(' '));
  } finally {
    await b.close();
  }
});

test("a stream's later tokens wait for the end of the turn they were read in; another stream's first token read in it goes first", async () => {
  // Upstream and backend share this process's loop: what the upstream writes in one callback is
  // read by the backend in one turn, A's later token read before B's first.
  const answers = new Map<string, import('node:http').ServerResponse>();
  let arrived = () => {};
  const upstream = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    answers.set(String(req.headers['x-request-id']), res);
    arrived();
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const at = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const two = new HttpBackend({ name: 'b1', url: at, clock: wallClock, timers: wallTimers() });
  const order: string[] = [];
  const stream = (id: string) =>
    two.stream(
      {
        id,
        kind: 'chat',
        body: { model: 'm', messages: [] },
        signal: new AbortController().signal,
      },
      (t) => order.push(`${id}:${t.text}`),
    );
  const next = () => new Promise<void>((r) => (arrived = r));
  try {
    let came = next();
    const a = stream('A');
    await came;
    answers.get('A')?.write(delta('1'));
    while (order.length === 0) await new Promise((r) => setTimeout(r, 1));
    came = next();
    const b = stream('B');
    await came;
    await new Promise((r) => setTimeout(r, 20));
    answers.get('A')?.write(delta('2'));
    answers.get('B')?.write(delta('1'));
    await new Promise((r) => setTimeout(r, 20));
    for (const res of answers.values()) res.end('data: [DONE]\n\n');
    await Promise.all([a, b]);
    assert.deepEqual(order, ['A:1', 'B:1', 'A:2']);
  } finally {
    await two.close();
    upstream.close();
  }
});

test('a token read in the turn its connection breaks is handed on before the failure', async () => {
  // The upstream drops the connection as soon as a later token is written: the token, queued
  // for the end of the turn it was read in, is handed on before the stream fails (Node reports
  // the close after that turn; were it in the same turn, the break hands it on itself).
  const upstream = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(delta('a'));
    setTimeout(() => res.write(delta('b'), () => res.socket?.destroy()), 20);
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const at = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const cut = new HttpBackend({ name: 'b2', url: at, clock: wallClock, timers: wallTimers() });
  const texts: string[] = [];
  try {
    const err = await cut
      .stream(
        {
          id: 'r2',
          kind: 'chat',
          body: { model: 'm', messages: [] },
          signal: new AbortController().signal,
        },
        (t) => texts.push(t.text),
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    assert.ok(isUpstreamError(err), String(err));
    assert.deepEqual(texts, ['a', 'b']);
  } finally {
    await cut.close();
    upstream.close();
  }
});

/** `server` listening on a free port, and a backend in front of it. */
async function backendOf(
  server: Server,
  o: { readonly scrapeIntervalMs?: number; readonly upstreamIdleMs?: number },
): Promise<HttpBackend> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return new HttpBackend({ name: 'b', url, clock: wallClock, timers: wallTimers(), ...o });
}

test('a /metrics that trickles on forever fails its scrape in time, and the next scrape finds the backend ready', async () => {
  const METRICS =
    'vllm:num_requests_running 0\nvllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 0\n';
  let trickle = true;
  const held: NodeJS.Timeout[] = [];
  const metrics = createServer((req, res) => {
    req.resume();
    res.write(METRICS);
    if (!trickle) return void res.end();
    // A comment line every 100 ms, never an end: a socket idle timeout never fires.
    held.push(setInterval(() => res.write('# still here\n'), 100));
  });
  const slow = await backendOf(metrics, { scrapeIntervalMs: 50 });
  try {
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(slow.load().ready, false, 'no scrape has ended');
    trickle = false;
    const started = Date.now();
    while (!slow.load().ready && Date.now() - started < 5_000) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(slow.load().ready, true, 'the stuck scrape was cut, and the next one read it');
  } finally {
    for (const t of held) clearInterval(t);
    await slow.close();
    metrics.closeAllConnections();
    metrics.close();
  }
});

test('a backend silent past the idle bound fails the call: before its head, or mid-stream', async () => {
  let mode: 'never' | 'stall' = 'never';
  const silent = createServer((req, res) => {
    req.resume();
    if (mode === 'never') return; // accepts, reads, never answers
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(delta('a'));
  });
  const stalled = await backendOf(silent, { upstreamIdleMs: 300 });
  const call = () => ({
    id: 'r1',
    kind: 'chat' as const,
    body: { model: 'm', messages: [] },
    signal: new AbortController().signal,
  });
  try {
    for (const [m, before] of [
      ['never', true],
      ['stall', false],
    ] as const) {
      mode = m;
      const tokens: string[] = [];
      const err = await stalled
        .stream(call(), (t) => tokens.push(t.text))
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      assert.ok(isUpstreamError(err), `${m}: ${String(err)}`);
      assert.equal(err.beforeFirstToken, before, m);
      assert.deepEqual(tokens, before ? [] : ['a'], m);
    }
  } finally {
    await stalled.close();
    silent.closeAllConnections();
    silent.close();
  }
});

test("a reasoning model's thinking is a token of its own field, forwarded as it came; its reply follows", async () => {
  for (const field of ['reasoning', 'reasoning_content'] as const) {
    const think = (text: string) =>
      chunk({ choices: [{ index: 0, delta: { [field]: text }, finish_reason: null }] });
    script = [
      think('Two'),
      think(' primes'),
      delta('7'),
      delta('', 'stop'),
      chunk({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 3 } }),
      'data: [DONE]\r\n\r\n',
    ];
    const { tokens, end } = await events();
    assert.deepEqual(
      tokens.map((t) => [t.text, t.reasoning]),
      [
        ['', { field, text: 'Two' }],
        ['', { field, text: ' primes' }],
        ['7', undefined],
      ],
    );
    // Named as the gateway names the request: each goes to the client as the bytes it came in.
    assert.ok(tokens.every((t) => t.sse !== undefined));
    assert.equal(
      Buffer.from(tokens[0].sse as Uint8Array).toString(),
      think('Two').replace(/\r/g, ''),
    );
    assert.equal(end.completionTokens, 3, 'thinking tokens are counted');
  }
});

test("a tool call's pieces are tokens, read whole each time and forwarded as they came; a piece with no index breaks the stream", async () => {
  // As vLLM's tool parsers stream a call: its name first, then its arguments piece by piece, the
  // last beside the finish.
  const piece = (call: object, finish: string | null = null) =>
    chunk({ choices: [{ index: 0, delta: { tool_calls: [call] }, finish_reason: finish }] });
  const named = { index: 0, id: 'chatcmpl-tool-1', type: 'function', function: { name: 'f' } };
  script = [
    piece(named),
    piece({ index: 0, function: { arguments: '{"city": ' } }),
    piece({ index: 0, function: { arguments: '"Oslo"' } }),
    piece({ index: 0, function: { arguments: '}' } }, 'tool_calls'),
    chunk({ choices: [], usage: { prompt_tokens: 30, completion_tokens: 9 } }),
    'data: [DONE]\n\n',
  ];
  const { tokens, end } = await events();
  assert.deepEqual(
    tokens.map((t) => [t.text, t.toolCalls]),
    [
      ['', [named]],
      ['', [{ index: 0, function: { arguments: '{"city": ' } }]],
      ['', [{ index: 0, function: { arguments: '"Oslo"' } }]],
      ['', [{ index: 0, function: { arguments: '}' } }]],
    ],
  );
  // The same shape twice over is read whole: a learnt shape would read the next as text.
  assert.deepEqual(
    tokens.map((t) => t.sse !== undefined),
    [true, true, true, false],
    'the finish goes rebuilt',
  );
  assert.equal(end.finishReason, 'tool_calls');
  assert.equal(end.completionTokens, 9);

  script = [piece({ id: 'x', function: { name: 'f' } }), 'data: [DONE]\n\n'];
  const err = await events().then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(isUpstreamError(err));
  assert.match(err.message, /a tool call without its index/);
});

test("a token's log probabilities come with it, read whole each time; a list of none scores no token", async () => {
  const scored = (content: string, logprob: number, finish: string | null = null) =>
    chunk({
      choices: [
        {
          index: 0,
          delta: { content },
          logprobs: { content: [{ token: content, logprob, bytes: [], top_logprobs: [] }] },
          finish_reason: finish,
        },
      ],
    });
  script = [
    scored('a', -0.5),
    scored('b', -0.5),
    // As some servers write on every chunk, asked or not.
    chunk({
      choices: [{ index: 0, delta: {}, logprobs: { content: null }, finish_reason: 'stop' }],
    }),
    'data: [DONE]\n\n',
  ];
  const { tokens, end } = await events();
  assert.deepEqual(
    tokens.map((t) => [t.text, (t.logprobs as { content: { token: string }[] }).content[0].token]),
    [
      ['a', 'a'],
      ['b', 'b'],
    ],
  );
  assert.ok(
    tokens.every((t) => t.sse !== undefined),
    'named as the gateway names it: as it came',
  );
  assert.equal(end.completionTokens, 2);
});
