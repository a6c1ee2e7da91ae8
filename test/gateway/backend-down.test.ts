// A backend that goes down and comes back is a new server: the gateway finds it down as soon as
// nothing listens on its port — not once its last figures have aged out — and forgets what its
// prefix cache held, so a prompt it had cached is not routed as a hit on the restarted, empty
// one. The decision log says which hit each request was routed on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serveEngine } from '../../src/engine-server/serve.ts';
import {
  decisionRecord,
  gateway,
  metricValue,
  onTeardown,
  postChat,
  until,
} from './gateway-kit.ts';

const ADMIN = 'down-admin';
// A prompt of many blocks, the same each time: a cache that held it serves most of it.
const LONG = 'The same long system prompt, word after word. '.repeat(80);

interface Routed {
  demand: { prefix_hit_tokens: number };
  route: { prefix_hit_tokens: number } | null;
}

test('a backend killed and restarted is down at once and comes back with an empty cache', async () => {
  const first = await serveEngine({ port: 0, profile: 'const:step_ms=2', seed: 1 });
  const port = new URL(first.url).port;
  const gw = await gateway([first], 'goodput', { adminToken: ADMIN });
  const ask = async () => {
    const res = await postChat(gw.url, {
      messages: [{ role: 'user', content: LONG }],
      max_tokens: 2,
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.text();
    const id = res.headers.get('x-goodput-request-id') ?? '';
    return decisionRecord<Routed>(gw.url, id, ADMIN);
  };
  await ask();
  const cached = await ask();
  assert.ok(cached.demand.prefix_hit_tokens > 0, 'the second asks of a warm cache');
  assert.equal(cached.route?.prefix_hit_tokens, cached.demand.prefix_hit_tokens);

  await first.close();
  // Nothing listens: not ready at the next scrape (every 20 ms here), well before its last
  // figures would have aged out (5 s).
  await until(async () => (await metricValue(gw.url, 'goodput_backend_ready')) === 0, 200);

  const again = await serveEngine({ port: Number(port), profile: 'const:step_ms=2', seed: 2 });
  onTeardown(() => again.close());
  await until(async () => (await metricValue(gw.url, 'goodput_backend_ready')) === 1, 400);
  const cold = await ask();
  assert.equal(cold.demand.prefix_hit_tokens, 0, 'a restarted server holds nothing');
  assert.equal(cold.route?.prefix_hit_tokens, 0);
});
