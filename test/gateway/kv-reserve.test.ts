// The KV a request reserves at a cold start, through the live gateway: while its class's output
// lengths are only the prior's guess, KV for `estimate.prior_output_reserve` tokens of output
// (within its max_tokens), or for its class's own reserve — the same core as the simulator's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MODEL, engines, gateway, policyWith } from './gateway-kit.ts';

const backends = await engines(1);
const plain = await gateway(backends, 'goodput', { adminToken: 'admin-secret' });
const own = await gateway(
  backends,
  policyWith({ estimate: { by_class: { interactive: { prior_output_reserve: 1_000 } } } }),
  { adminToken: 'admin-secret' },
);

interface Demand {
  readonly input_tokens: number;
  readonly output_p90: number;
  readonly output_source: string;
  readonly kv_reserved_tokens: number;
}

async function reserved(url: string, body: Record<string, unknown>): Promise<Demand> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  await res.text();
  const id = res.headers.get('x-goodput-request-id');
  const rec = (await (
    await fetch(`${url}/admin/decisions/${id}`, {
      headers: { authorization: 'Bearer admin-secret' },
    })
  ).json()) as { demand: Demand };
  return rec.demand;
}

test('a cold start reserves KV for 4,096 tokens of output, or its max_tokens when that is less', async () => {
  const uncapped = await reserved(plain.url, {});
  assert.equal(uncapped.output_source, 'prior');
  assert.equal(uncapped.output_p90, 512);
  assert.equal(uncapped.kv_reserved_tokens, uncapped.input_tokens + 4_096);
  const capped = await reserved(plain.url, { max_tokens: 300 });
  assert.equal(capped.kv_reserved_tokens, capped.input_tokens + 300);
});

test("a class's own reserve (estimate.by_class) is what its requests reserve", async () => {
  const d = await reserved(own.url, {});
  assert.equal(d.output_source, 'prior');
  assert.equal(d.kv_reserved_tokens, d.input_tokens + 1_000);
});
