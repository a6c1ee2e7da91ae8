// Request traces as a collector receives them: a real OTLP/HTTP receiver in the test decodes
// what the gateway's exporter sends (JSON) and the span tree is checked — a streamed request
// (request span, admission, queue, one attempt with its first token, GenAI attributes and usage),
// a request failed over to a second backend (two attempts, each naming its backend and outcome),
// refusals (error status and reason), and W3C trace context: a client's traceparent makes the
// request span its child, and each backend receives the attempt's span as its parent (or, with
// tracing off, the client's own). Backends are `goodput engine`s behind recording proxies that
// can fail a request. Through a real `goodput serve`: --otlp-endpoint checked at start, and the
// spans flushed on SIGTERM.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  createServer,
  request,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { memoryOpsLog } from '../../src/gateway/ops-log.ts';
import { otlpTracer } from '../../src/gateway/tracing/otlp-tracer.ts';
import { randomHex } from '../../src/runtime/entropy-rng.ts';
import { epochMs, wallClock } from '../../src/runtime/wall-clock.ts';
import { MODEL, engines, gateway, postChat, until } from './gateway-kit.ts';
import { startServe, until as within } from './process-kit.ts';

// --- an OTLP/HTTP collector --------------------------------------------------------------------

type AnyValue = {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values: AnyValue[] };
};
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes?: { key: string; value: AnyValue }[];
  events?: { name: string }[];
  status?: { code?: number; message?: string };
}
/** A span as the tests read it: attributes as plain values. */
interface Received extends OtlpSpan {
  readonly attrs: Record<string, unknown>;
  readonly service: unknown;
}

const OTLP_SERVER = 2;
const OTLP_CLIENT = 3;
const STATUS_ERROR = 2;

function plain(v: AnyValue): unknown {
  if (v.arrayValue !== undefined) return v.arrayValue.values.map(plain);
  if (v.intValue !== undefined) return Number(v.intValue);
  return v.stringValue ?? v.doubleValue ?? v.boolValue;
}
const attrsOf = (kv: { key: string; value: AnyValue }[] = []) =>
  Object.fromEntries(kv.map((a) => [a.key, plain(a.value)]));

const received: Received[] = [];
let exportsSeen = 0;
const collector = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (d: string) => (body += d));
  req.on('end', () => {
    assert.equal(req.url, '/v1/traces');
    assert.match(String(req.headers['content-type']), /application\/json/);
    exportsSeen++;
    const doc = JSON.parse(body) as {
      resourceSpans: {
        resource: { attributes: { key: string; value: AnyValue }[] };
        scopeSpans: { spans: OtlpSpan[] }[];
      }[];
    };
    for (const rs of doc.resourceSpans) {
      const service = attrsOf(rs.resource.attributes)['service.name'];
      for (const ss of rs.scopeSpans) {
        for (const s of ss.spans) received.push({ ...s, attrs: attrsOf(s.attributes), service });
      }
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
});
const collectorUrl = await listen(collector);
after(() => closeAll(collector));

// --- backends behind proxies that record what they are sent, and fail when told to -------------

/** Completion requests every proxy saw, in order: the backend's name and the headers. */
const upstreamCalls: { backend: string; headers: IncomingHttpHeaders }[] = [];
/** How many of the next completion requests (to any backend) get a 500. */
let failNext = 0;

function proxy(name: string, target: string): Server {
  return createServer((req, res) => {
    if (req.method === 'POST') {
      upstreamCalls.push({ backend: name, headers: req.headers });
      if (failNext > 0) {
        failNext--;
        req.resume();
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"scripted failure","type":"server_error"}}');
        return;
      }
    }
    const up = request(
      `${target}${req.url}`,
      { method: req.method, headers: req.headers },
      (r: IncomingMessage) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.once('error', () => res.destroy());
    req.pipe(up);
  });
}

const [e0, e1] = await engines(2);
const proxies = [proxy('p0', e0.url), proxy('p1', e1.url)];
const proxyUrls = await Promise.all(proxies.map(listen));
after(() => Promise.all(proxies.map(closeAll)));
const backends = proxyUrls.map((url) => ({ url }));

const tracer = otlpTracer({
  endpoint: `${collectorUrl}/v1/traces`,
  serviceName: 'goodput-under-test',
  clock: wallClock,
  epochMs,
  randomHex,
  log: memoryOpsLog(),
});
const traced = await gateway(backends, 'goodput', { tracer });
const untraced = await gateway(backends);

/** The spans of the trace whose request span has `id`, once that span (and `count`) arrived. */
async function traceOf(id: string, count: number): Promise<Received[]> {
  let spans: Received[] = [];
  await until(async () => {
    await tracer.flush();
    const root = received.find((s) => s.attrs['goodput.request_id'] === id);
    spans = root === undefined ? [] : received.filter((s) => s.traceId === root.traceId);
    return spans.length >= count;
  });
  return spans;
}

const one = (spans: Received[], name: string) => {
  const found = spans.filter((s) => s.name === name);
  assert.equal(found.length, 1, `one ${name} span of ${spans.map((s) => s.name).join(', ')}`);
  return found[0];
};
const nanos = (t: string | number) => BigInt(t);

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';

test('a streamed request: its span under the client’s, admission, queue, one attempt with its first token, GenAI usage', async () => {
  upstreamCalls.length = 0;
  const res = await postChat(
    traced.url,
    { max_tokens: 5, stream: true, stream_options: { include_usage: true } },
    {
      traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
      tracestate: 'vendor=abc',
      'x-slo-ttft-ms': '1500',
    },
  );
  assert.equal(res.status, 200);
  const text = await res.text();
  assert.match(text, /\[DONE\]/);
  const id = res.headers.get('x-goodput-request-id') ?? '';
  const spans = await traceOf(id, 4);

  const root = one(spans, 'POST /v1/chat/completions');
  assert.equal(root.kind, OTLP_SERVER);
  assert.equal(root.traceId, CLIENT_TRACE, 'the client’s trace continues');
  assert.equal(root.parentSpanId, CLIENT_SPAN, 'the request span is the client span’s child');
  assert.equal(root.service, 'goodput-under-test');
  assert.equal(root.status?.code ?? 0, 0, 'served: no error');
  const usage = /"usage":\{"prompt_tokens":(\d+),"completion_tokens":(\d+)/.exec(text);
  assert.ok(usage, text);
  const expected = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': MODEL,
    'gen_ai.request.max_tokens': 5,
    'gen_ai.request.stream': true,
    'gen_ai.usage.input_tokens': Number(usage[1]),
    'gen_ai.usage.output_tokens': 5,
    'gen_ai.response.finish_reasons': ['length'],
    'gen_ai.response.id': `chatcmpl-${id}`,
    'goodput.class': 'interactive',
    'goodput.tenant': 'default',
    'goodput.decision': 'admit',
    'http.response.status_code': 200,
  };
  const got = Object.fromEntries(Object.keys(expected).map((k) => [k, root.attrs[k]]));
  assert.deepEqual(got, expected);
  assert.ok(Number(root.attrs['goodput.ttft_ms']) > 0);
  assert.equal(root.attrs['goodput.target.ttft_ms'], 1500, 'the client’s own target, recorded');
  assert.ok(Number(root.attrs['goodput.queue_ms']) >= 0);

  const admission = one(spans, 'admission');
  const queue = one(spans, 'queue');
  const attempt = one(spans, `chat ${MODEL}`);
  for (const child of [admission, queue, attempt]) {
    assert.equal(child.parentSpanId, root.spanId, `${child.name} is the request's child`);
  }
  // In order, inside the request: admission, the wait, the attempt.
  assert.ok(nanos(root.startTimeUnixNano) <= nanos(admission.startTimeUnixNano));
  assert.ok(nanos(admission.endTimeUnixNano) <= nanos(queue.startTimeUnixNano));
  assert.ok(nanos(queue.endTimeUnixNano) <= nanos(attempt.startTimeUnixNano));
  assert.ok(nanos(attempt.endTimeUnixNano) <= nanos(root.endTimeUnixNano));
  assert.equal(attempt.kind, OTLP_CLIENT);
  assert.equal(attempt.attrs['goodput.attempt.outcome'], 'completed');
  assert.equal(attempt.attrs['goodput.attempt'], 1);
  assert.equal(attempt.attrs['server.address'], '127.0.0.1');
  assert.ok(
    attempt.events?.some((e) => e.name === 'first_token'),
    'first token is an event',
  );
  assert.ok(Number(attempt.attrs['gen_ai.response.time_to_first_chunk']) > 0);

  // The backend was sent the attempt's span as its parent, in the client's trace.
  assert.equal(upstreamCalls.length, 1);
  const sent = upstreamCalls[0];
  const port = Number(new URL(proxyUrls[sent.backend === 'p0' ? 0 : 1]).port);
  assert.equal(attempt.attrs['server.port'], port);
  assert.equal(sent.headers.traceparent, `00-${CLIENT_TRACE}-${attempt.spanId}-01`);
  assert.equal(sent.headers.tracestate, 'vendor=abc');
});

test('a request failed over: two attempts, the first failed on one backend, the second served by the other', async () => {
  upstreamCalls.length = 0;
  failNext = 1;
  const res = await postChat(traced.url, { max_tokens: 3 });
  assert.equal(res.status, 200, await res.clone().text());
  await res.text();
  const id = res.headers.get('x-goodput-request-id') ?? '';
  const spans = await traceOf(id, 7);
  const root = one(spans, 'POST /v1/chat/completions');
  assert.equal(root.status?.code ?? 0, 0);
  const attempts = spans
    .filter((s) => s.name === `chat ${MODEL}`)
    .sort((a, b) => Number(a.attrs['goodput.attempt']) - Number(b.attrs['goodput.attempt']));
  assert.equal(attempts.length, 2);
  const [failed, served] = attempts;
  assert.equal(failed.attrs['goodput.attempt.outcome'], 'failed');
  assert.equal(failed.attrs['http.response.status_code'], 500);
  assert.equal(failed.status?.code, STATUS_ERROR);
  assert.equal(failed.status?.message, 'upstream_error');
  assert.equal(served.attrs['goodput.attempt.outcome'], 'completed');
  assert.notEqual(failed.attrs['goodput.backend'], served.attrs['goodput.backend']);
  assert.equal(spans.filter((s) => s.name === 'admission').length, 2, 'each attempt admitted');
  // Each backend was sent its own attempt as the parent, all in the request's trace.
  assert.deepEqual(
    upstreamCalls.map((c) => c.headers.traceparent),
    attempts.map((a) => `00-${root.traceId}-${a.spanId}-01`),
  );
});

test('refusals end the request span with error status and the reason', async () => {
  // Refused by admission: the prompt and max_tokens cannot fit the model's context.
  const big = await postChat(traced.url, { max_tokens: 1_000_000 });
  assert.equal(big.status, 400);
  await big.text();
  const spans = await traceOf(big.headers.get('x-goodput-request-id') ?? '', 2);
  const root = one(spans, 'POST /v1/chat/completions');
  const admission = one(spans, 'admission');
  assert.equal(root.status?.code, STATUS_ERROR);
  assert.equal(root.status?.message, 'context_length');
  assert.equal(root.attrs['goodput.reason'], 'context_length');
  assert.equal(root.attrs['goodput.decision'], 'reject');
  assert.equal(root.attrs['http.response.status_code'], 400);
  assert.equal(admission.status?.code, STATUS_ERROR);
  assert.equal(spans.length, 2, 'no queue, no attempt');

  // Refused before it could be read: the request span alone.
  const bad = await fetch(`${traced.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"model": ',
  });
  assert.equal(bad.status, 400);
  await bad.text();
  const [unread] = await traceOf(bad.headers.get('x-goodput-request-id') ?? '', 1);
  assert.equal(unread.status?.message, 'invalid_request');
});

test('tracing off: a client’s trace context goes to the backend as it came, its tracestate’s valid members only; a malformed one is dropped', async () => {
  upstreamCalls.length = 0;
  const traceparent = `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`;
  const exports = exportsSeen;
  for (const h of [
    { traceparent, tracestate: 'vendor=abc,congo=t61rcWkgMzE' },
    { traceparent: '00-xyz-nope-01', tracestate: 'vendor=abc' },
    // Members that are not valid (a key in capitals, a value with `=`) are dropped.
    { traceparent, tracestate: 'Bad=1,ok=fine,v=has space,w=a=b' },
    { traceparent, tracestate: 'NOT VALID' },
    // Longer than the recommendation's 512 characters: none of it.
    { traceparent, tracestate: `ok=${'x'.repeat(600)}` },
  ]) {
    const res = await postChat(untraced.url, { max_tokens: 2 }, h);
    assert.equal(res.status, 200);
    await res.text();
  }
  assert.equal(upstreamCalls[0].headers.traceparent, traceparent);
  assert.equal(upstreamCalls[0].headers.tracestate, 'vendor=abc,congo=t61rcWkgMzE');
  assert.equal(upstreamCalls[1].headers.traceparent, undefined);
  assert.equal(upstreamCalls[1].headers.tracestate, undefined);
  assert.equal(upstreamCalls[2].headers.traceparent, traceparent);
  assert.equal(upstreamCalls[2].headers.tracestate, 'ok=fine,v=has space');
  assert.equal(upstreamCalls[3].headers.tracestate, undefined);
  assert.equal(upstreamCalls[4].headers.tracestate, undefined);
  await tracer.flush();
  assert.equal(exportsSeen, exports, 'the untraced gateway exported nothing');
});

test('goodput serve: --otlp-endpoint is checked at start; spans are flushed on SIGTERM', async () => {
  for (const bad of ['collector:4318', 'ftp://collector/v1/traces', 'http://u:p@collector']) {
    const r = spawnSync(
      process.execPath,
      ['bin/goodput.js', 'serve', '--port', '0', '--otlp-endpoint', bad],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /^goodput: --otlp-endpoint: expected /);
    assert.ok(r.stderr.includes(JSON.stringify(bad)), r.stderr);
  }
  // No path: the collector's root, to which the traces path is added.
  const { proc, id } = await servedOnce(collectorUrl, '--otlp-service-name', 'edge-gateway');
  // Batched for 5 s: only the shutdown sends it this soon.
  proc.child.kill('SIGTERM');
  assert.deepEqual(await proc.exited, { code: 0, signal: null });
  const root = received.find((s) => s.attrs['goodput.request_id'] === id);
  assert.ok(root, proc.output());
  assert.equal(root.service, 'edge-gateway');
});

test('goodput serve: a collector that never answers costs its spans at SIGTERM, not a clean exit', async () => {
  // It takes the export and never answers: the last flush times out.
  const silent = createServer(() => {});
  const silentUrl = await listen(silent);
  after(() => closeAll(silent));
  const { proc } = await servedOnce(silentUrl);
  proc.child.kill('SIGTERM');
  assert.deepEqual(await proc.exited, { code: 0, signal: null }, proc.output());
  assert.match(proc.output(), /trace export at shutdown failed: spans dropped/);
  assert.match(proc.output(), /"msg":"stopped"/);
});

/** `goodput serve` tracing to `endpoint`, once ready, having served one chat: its id. */
async function servedOnce(endpoint: string, ...extra: string[]) {
  const { url, proc } = await startServe([
    ...['--backend', e0.url, '--profile', 'const:step_ms=2', '--otlp-endpoint', endpoint],
    ...extra,
  ]);
  await within('the gateway ready', async () => (await fetch(`${url}/readyz`)).status === 200);
  const res = await postChat(url, { max_tokens: 2 });
  assert.equal(res.status, 200);
  await res.text();
  return { proc, id: res.headers.get('x-goodput-request-id') };
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function closeAll(server: Server): Promise<void> {
  const closed = new Promise<void>((r) => server.close(() => r()));
  server.closeAllConnections();
  return closed;
}
