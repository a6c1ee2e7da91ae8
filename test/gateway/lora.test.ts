// LoRA adapters through the gateway, as a vLLM fleet serves them: a request whose model names an
// adapter is admitted, routed and served with it; /v1/models lists the adapters; an unknown one
// is a 404 naming what is served; and the adapter-aware router keeps each adapter on a replica
// where it is resident, so with one slot per replica two adapters never thrash one engine. Its
// requests are counted under the adapter's name (`model_name`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { engines, gateway, metricValue, policyWith, staleVllm, until } from './gateway-kit.ts';
import { memoryOpsLog } from '../../src/gateway/ops-log.ts';
import type { ListeningEngineServer } from '../../src/engine-server/serve.ts';

const ADAPTERS = ['sql-lora', 'chat-lora'];
const lora = { loraModules: ADAPTERS, maxLoras: 1, loraLoadMs: 20 };

async function fleet(routing: string) {
  const backends = await engines(2, lora);
  const gw = await gateway(
    backends,
    policyWith({ admission: { type: 'admit-all' }, routing: { type: routing } }),
    { engine: lora },
  );
  return { backends, gw };
}

/**
 * Each engine's resident adapters, from its slots themselves: its lora_requests_info names, as
 * vLLM's does, only the adapters of running requests.
 */
function resident(backends: readonly ListeningEngineServer[]): string[] {
  return backends.map((b) => b.backend.load().loras?.join(',') ?? '');
}

test('a model naming an adapter is served with it; /v1/models lists it; an unknown one is a 404', async () => {
  const { gw } = await fleet('expected-completion');
  const r = await gw.client.chat.completions.create({
    model: 'sql-lora',
    messages: [{ role: 'user', content: 'SELECT 1?' }],
    max_tokens: 3,
  });
  assert.equal(r.model, 'sql-lora');
  // Counted under the adapter it asked for: model_name is one of the names served.
  const done = { class: 'interactive', model_name: 'sql-lora' };
  assert.equal(await metricValue(gw.url, 'goodput_completed_requests_total', done), 1);
  const models = await gw.client.models.list();
  // As vLLM lists them, so a router in front of the gateway reads its adapters the same way.
  assert.deepEqual(
    models.data.map((m) => [m.id, (m as { parent?: string | null }).parent]),
    [['llama-3-8b', null], ...ADAPTERS.map((a) => [a, 'llama-3-8b'])],
  );
  await assert.rejects(
    gw.client.chat.completions.create({
      model: 'nope',
      messages: [{ role: 'user', content: 'x' }],
    }),
    (e: { status?: number; message?: string }) =>
      e.status === 404 && /llama-3-8b, sql-lora, chat-lora/.test(String(e.message)),
  );
});

/** Sends adapters in pairs (a, a, b, b, …) one at a time; counts changes of residency. */
async function residencyChanges(routing: string): Promise<number> {
  const { backends, gw } = await fleet(routing);
  let last = resident(backends);
  let changes = 0;
  for (let k = 0; k < 16; k++) {
    await gw.client.chat.completions.create({
      model: ADAPTERS[Math.floor(k / 2) % 2],
      messages: [{ role: 'user', content: `question ${k}` }],
      max_tokens: 2,
    });
    const now = resident(backends);
    changes += now.filter((a, i) => a !== last[i]).length;
    last = now;
    // The gateway scrapes the engines' residency before the next request is placed.
    await new Promise((r) => setTimeout(r, 60));
  }
  return changes;
}

test('adapter-aware routing keeps each adapter resident on its own replica; round-robin thrashes', async (t) => {
  const aware = await residencyChanges('expected-completion');
  const blind = await residencyChanges('round-robin');
  t.diagnostic(`adapter loads: expected-completion ${aware}, round-robin ${blind}`);
  // Two first loads, then none: each adapter stays where it is resident.
  assert.ok(aware <= 2, `expected-completion changed residency ${aware} times`);
  assert.ok(blind > aware, `round-robin ${blind}, expected-completion ${aware}`);
});

test('a backend whose batches run another max_loras than the gateway plans with is logged, once', async () => {
  // The engines run two adapters a batch (vllm:lora_requests_info's max_lora); the gateway was
  // told one: its flow control would hold requests the engines could run.
  const backends = await engines(2, { ...lora, maxLoras: 2 });
  const log = memoryOpsLog();
  await gateway(backends, 'goodput', { engine: lora, log });
  const told = () => log.lines.filter((l) => /max_loras/.test(l.msg));
  await until(() => told().length === 2);
  for (const l of told()) {
    assert.equal(l.level, 'warn');
    assert.match(l.msg, /runs max_loras 2 but the gateway plans with 1: pass --max-loras 2/);
    assert.deepEqual([l.fields.max_loras, l.fields.planned_max_loras], [2, 1]);
  }
  // Scraped again and again, each backend is told of once.
  await new Promise((ok) => setTimeout(ok, 300));
  assert.equal(told().length, 2);
});

test('each backend serves the adapters its /v1/models lists: requests go only there; an adapter served nowhere is a 503', async () => {
  const engine = { maxLoras: 1, loraLoadMs: 5 };
  const [sql] = await engines(1, { ...engine, loraModules: ['sql-lora'] });
  const [chat] = await engines(1, { ...engine, loraModules: ['chat-lora'] });
  const log = memoryOpsLog();
  // The gateway serves a third adapter no backend has loaded (yet).
  const gw = await gateway(
    [sql, chat],
    policyWith({ admission: { type: 'admit-all' }, routing: { type: 'round-robin' } }),
    { engine: { ...engine, loraModules: [...ADAPTERS, 'spare-lora'] }, log },
  );
  const served = () => log.lines.filter((l) => / serves /.test(l.msg)).map((l) => l.msg);
  await until(() => served().length === 2);
  assert.deepEqual(served().sort(), [
    'backend backend-0 serves LoRA adapters sql-lora',
    'backend backend-1 serves LoRA adapters chat-lora',
  ]);
  // In pairs, so round-robin alone would send every second request to the wrong backend,
  // which answers 404 for an adapter it does not have.
  for (const model of ['sql-lora', 'sql-lora', 'chat-lora', 'chat-lora', 'sql-lora', 'sql-lora']) {
    const r = await gw.client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: `for ${model}` }],
      max_tokens: 2,
    });
    assert.equal(r.model, model);
  }
  const spare = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'spare-lora',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 2,
    }),
  });
  assert.equal(spare.status, 503);
  assert.equal(spare.headers.get('x-goodput-reason'), 'no_ready_replica');
  assert.ok(Number(spare.headers.get('retry-after')) >= 1);
  // The four for sql-lora completed, counted under the adapter they asked for.
  assert.equal(
    await metricValue(gw.url, 'goodput_completed_requests_total', {
      class: 'interactive',
      model_name: 'sql-lora',
    }),
    4,
  );
});

test('a backend that answers 404 for an adapter it listed: the request is served by another that loads it', async () => {
  // A vLLM whose /v1/models still lists sql-lora, unloaded since: every completion is a 404.
  const unloaded = await staleVllm('llama-3-8b', () => ['sql-lora']);
  const engine = { loraModules: ['sql-lora'], maxLoras: 1, loraLoadMs: 5 };
  const [loaded] = await engines(1, engine);
  const log = memoryOpsLog();
  const gw = await gateway(
    [unloaded, loaded],
    policyWith({ admission: { type: 'admit-all' }, routing: { type: 'round-robin' } }),
    { engine, log },
  );
  await until(() => log.lines.filter((l) => / serves /.test(l.msg)).length === 2);
  for (let k = 0; k < 4; k++) {
    const r = await gw.client.chat.completions.create({
      model: 'sql-lora',
      messages: [{ role: 'user', content: `query ${k}` }],
      max_tokens: 2,
    });
    assert.equal(r.model, 'sql-lora');
  }
  const stale = unloaded.hits.filter((h) => h === '/v1/chat/completions').length;
  assert.ok(stale >= 1, 'round-robin sent at least one to the backend without the adapter');
});
