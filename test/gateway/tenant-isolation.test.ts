// Tenant isolation, live: one slow engine behind `goodput`, two API keys. A heavy tenant keeps
// the gateway backlogged (40 requests every 200 ms for 6.4 s, far beyond capacity) while a light
// one (weight 4) sends a request every 250 ms, 24 in all. Queued by virtual token counters, the
// light tenant's requests are admitted and served ahead of the heavy backlog; queued FIFO, most
// are refused with it — the ordering the simulator shows (test/fairness.test.ts), measured here
// by the client. Even first in the fair order a light request is refused when it lands while
// every seat stays taken past the queue-delay target (0–3 in 10, measured); 24 samples keep that
// noise from blurring the difference.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { engines, gateway, policyWith, postChat } from './gateway-kit.ts';

const slow = { profile: 'const:step_ms=10', maxNumSeqs: 4 };
const sha = (key: string) => createHash('sha256').update(key).digest('hex');

interface Outcome {
  readonly tenant: 'heavy' | 'light';
  readonly served: boolean;
}

async function scenario(order: 'vtc' | 'fifo'): Promise<Record<'heavy' | 'light', number>> {
  const backends = await engines(1, slow);
  const policy = policyWith({
    queueing: { order },
    tenants: {
      heavy: { weight: 1, api_keys_sha256: [sha('sk-heavy')] },
      light: { weight: 4, api_keys_sha256: [sha('sk-light')] },
    },
  });
  const gw = await gateway(backends, policy, { engine: slow });
  const send = async (tenant: 'heavy' | 'light'): Promise<Outcome> => {
    const res = await postChat(
      gw.url,
      { max_tokens: 40, ignore_eos: true },
      { authorization: `Bearer sk-${tenant}` },
    );
    await res.arrayBuffer();
    return { tenant, served: res.status === 200 };
  };
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const all: Promise<Outcome>[] = [];
  const heavy = (async () => {
    for (let burst = 0; burst < 32; burst++) {
      for (let i = 0; i < 40; i++) all.push(send('heavy'));
      await sleep(200);
    }
  })();
  const light = (async () => {
    await sleep(400);
    for (let i = 0; i < 24; i++) {
      all.push(send('light'));
      await sleep(250);
    }
  })();
  await Promise.all([heavy, light]);
  const outcomes = await Promise.all(all);
  const rate = (t: 'heavy' | 'light') => {
    const mine = outcomes.filter((o) => o.tenant === t);
    return mine.filter((o) => o.served).length / mine.length;
  };
  return { heavy: rate('heavy'), light: rate('light') };
}

test('live, two API keys: the light tenant is served beside a heavy backlog under VTC, refused with it under FIFO', async (t) => {
  const fair = await scenario('vtc');
  const fifo = await scenario('fifo');
  t.diagnostic(`served: VTC ${JSON.stringify(fair)}, FIFO ${JSON.stringify(fifo)}`);
  assert.ok(fair.light > fair.heavy, `VTC: light ${fair.light}, heavy ${fair.heavy}`);
  assert.ok(fair.light > fifo.light, `light served: VTC ${fair.light}, FIFO ${fifo.light}`);
});
