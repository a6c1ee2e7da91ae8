// The gateway's guard of its own CPU, through real HTTP: while its event loop runs late, new
// requests are refused on arrival — 503 gateway_overloaded with Retry-After, counted as offered
// in their class and recorded — and served again once it has caught up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { MODEL, engines, gateway, metricValue, postChat, until } from './gateway-kit.ts';

const backends = await engines(1);
const gw = await gateway(backends, 'goodput', { shedLagMs: 5, adminToken: 'admin' });

/** Holds the event loop (the gateway's too: it runs in this process) for `ms`. */
function block(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

test('a gateway behind sheds new requests on arrival, then serves again', async () => {
  block(300);
  const shed = await postChat(gw.url, { max_tokens: 3 }, { 'x-goodput-class': 'batch' });
  assert.equal(shed.status, 503);
  assert.equal(shed.headers.get('x-goodput-reason'), 'gateway_overloaded');
  assert.equal(shed.headers.get('retry-after'), '1');
  // Keep-alive is off while shedding: the client reconnects, and the loop gets back to its timers.
  assert.equal(shed.headers.get('connection'), 'close');
  const id = shed.headers.get('x-goodput-request-id');
  assert.ok(id);
  const body = (await shed.json()) as { error: { code: string } };
  assert.equal(body.error.code, 'gateway_overloaded');
  const labels = { reason: 'gateway_overloaded', class: 'batch', outcome: 'reject' };
  assert.equal(await metricValue(gw.url, 'goodput_admission_decisions_total', labels), 1);
  assert.equal(await metricValue(gw.url, 'goodput_offered_requests_total', { class: 'batch' }), 1);
  const record = await fetch(`${gw.url}/admin/decisions/${id}`, {
    headers: { authorization: 'Bearer admin' },
  });
  const r = (await record.json()) as { class: string; admission: { reason: string } };
  assert.deepEqual([r.class, r.admission.reason], ['batch', 'gateway_overloaded']);
  await until(async () => {
    const res = await postChat(gw.url, { max_tokens: 3 });
    await res.text();
    return res.status === 200;
  });
  // Serving again is the proof it caught up; the gauge is exported (its value is the machine's).
  const lag = await metricValue(gw.url, 'goodput_event_loop_lag_seconds');
  assert.ok(Number.isFinite(lag) && lag >= 0, String(lag));
});

test('connections that send nothing do not keep a new one out', async () => {
  // More idle connections than the intake lets in at once: each holds its place for 100 ms at most.
  const { port } = new URL(gw.url);
  const idle = await Promise.all(
    Array.from(
      { length: 64 },
      () =>
        new Promise<Socket>((ok, fail) => {
          const s = connect(Number(port), '127.0.0.1', () => ok(s));
          s.once('error', fail);
        }),
    ),
  );
  try {
    await until(async () => (await onNewConnection(gw.url)) === 200);
    await until(async () => (await metricValue(gw.url, 'goodput_connections_waiting')) === 0);
  } finally {
    for (const s of idle) s.destroy();
  }
});

/** A small chat completion's status, asked on a connection of its own. */
function onNewConnection(url: string): Promise<number> {
  const body = JSON.stringify({
    model: MODEL,
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 3,
  });
  return new Promise((ok, fail) => {
    const req = request(
      `${url}/v1/chat/completions`,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        res.once('end', () => ok(res.statusCode ?? 0));
      },
    );
    req.once('error', fail);
    req.end(body);
  });
}
