// Gateways sharing one fleet: each backend's gauges count every client's requests, and a
// gateway leaves the seats of those it did not send to them. First the count, against a scripted
// vLLM; then two gateways on the same two slow engines under three times what they serve, where
// every request either admits is served within its SLO — each planning the engines' seats as its
// own alone, the engines queued the surplus past the 2 s TTFT.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { HttpBackend } from '../../src/gateway/http-backend.ts';
import { wallClock } from '../../src/runtime/wall-clock.ts';
import { wallTimers } from '../../src/runtime/wall-timers.ts';
import { engines, gateway, metricValue, policyWith, postChat, until } from './gateway-kit.ts';

test("a backend's gauges less this gateway's open requests, a seat a choice, are others'", async () => {
  let release = () => {};
  const held = new Promise<void>((r) => (release = r));
  const server = createServer(async (req, res) => {
    if (req.url === '/metrics') {
      res.end('vllm:num_requests_running 5\nvllm:num_requests_waiting 2\n');
      return;
    }
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'a' } }] })}\n\n`);
    await held;
    res.end('data: [DONE]\n\n');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  after(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clock = wallClock;
  const backend = new HttpBackend({
    name: 'b',
    url,
    clock,
    timers: wallTimers(),
    scrapeIntervalMs: 10,
  });
  after(() => backend.close());
  await until(() => backend.load().ready);
  assert.equal(backend.load().others, 7, 'none of the 7 is this gateway’s');
  const call = {
    id: 'r1',
    kind: 'chat' as const,
    body: { model: 'm', messages: [] },
    signal: new AbortController().signal,
  };
  const streaming = backend.stream(call, () => {});
  // Its choices are requests of their own to vLLM: 3 seats.
  const three = backend.stream({ ...call, id: 'r2', body: { ...call.body, n: 3 } }, () => {});
  await until(() => backend.load().others === 3);
  release();
  await Promise.all([streaming, three]);
  await until(() => backend.load().others === 7);
});

test('two gateways on one fleet each leave the seats of the other: what either admits is served in time', async () => {
  // 4 seats an engine, a 250-token reply 2.5 s: 3.2 requests/s between the two.
  const slow = { profile: 'const:step_ms=10', maxNumSeqs: 4 };
  const backends = await engines(2, slow);
  const policy = policyWith({ admission: { type: 'goodput' } });
  const gws = [
    await gateway(backends, policy, { engine: slow }),
    await gateway(backends, policy, { engine: slow }),
  ];
  const body = { max_tokens: 250, ignore_eos: true, stream: true };
  const sent: Promise<number>[] = [];
  let othersSeen = 0;
  const watch = (async () => {
    for (let i = 0; i < 30; i++) {
      for (const g of gws) {
        othersSeen = Math.max(
          othersSeen,
          await metricValue(g.url, 'goodput_backend_others_requests'),
        );
      }
      await sleep(200);
    }
  })();
  for (let i = 0; i < 60; i++) {
    const fields = { ...body, messages: [{ role: 'user', content: `flood ${i}` }] };
    sent.push(
      postChat(gws[i % 2].url, fields).then(async (r) => (await r.arrayBuffer(), r.status)),
    );
    await sleep(100);
  }
  const statuses = await Promise.all(sent);
  await watch;
  const served = statuses.filter((s) => s === 200).length;
  assert.ok(served >= 8, `served: ${served}`);
  assert.ok(othersSeen > 0, "each saw the other's requests at the engines");
  for (const g of gws) {
    const admitted = await metricValue(g.url, 'goodput_admission_decisions_total', {
      outcome: 'admit',
    });
    const good = await metricValue(g.url, 'goodput_good_requests_total');
    assert.ok(admitted > 0);
    assert.equal(good, admitted, 'every request admitted was served within its SLO');
  }
});
