// The gateway runs the autoscaler and exports its decision for an external actuator (KEDA, an
// HPA on external metrics): goodput_desired_replicas{pool}, the signals behind it, and a count
// of decisions by reason — from its own counts of offered and good requests and its backends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { engines, gateway, metricValue, until } from './gateway-kit.ts';

const AUTOSCALE = {
  type: 'goodput',
  limits: {
    minReplicas: 2,
    maxReplicas: 6,
    readyTimeMs: 120_000,
    tickMs: 50,
    headroom: 1.5,
    scaleInWindowMs: 300_000,
  },
};

test('goodput_desired_replicas and its signals are exported, within the limits', async () => {
  const backends = await engines(2);
  const gw = await gateway(backends, 'goodput', { autoscale: AUTOSCALE });
  for (let k = 0; k < 6; k++) {
    await gw.client.chat.completions.create({
      model: 'llama-3-8b',
      messages: [{ role: 'user', content: `question ${k}` }],
      max_tokens: 4,
    });
  }
  await until(
    async () =>
      (await metricValue(gw.url, 'goodput_autoscale_signal', { signal: 'capacity_rps' })) > 0,
  );
  const desired = await metricValue(gw.url, 'goodput_desired_replicas', { pool: 'default' });
  assert.ok(desired >= 2 && desired <= 6, String(desired));
  assert.equal(await metricValue(gw.url, 'goodput_autoscale_signal', { signal: 'ready' }), 2);
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(text, /^goodput_autoscale_decisions_total\{reason="[a-z_]+"\} \d+$/m);
});

test('requests refused before admission, unread, are demand the autoscaler sees', async () => {
  const gw = await gateway(await engines(2), 'goodput', { autoscale: AUTOSCALE });
  // A 5 ms deadline is out of reach from the headers alone: refused before its body is read.
  const refusedUnread = async () => {
    const r = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goodput-timeout-ms': '5' },
      body: JSON.stringify({ model: 'llama-3-8b', messages: [{ role: 'user', content: 'hi' }] }),
    });
    await r.arrayBuffer();
    return r.status;
  };
  const statuses = new Set<number>();
  await until(async () => {
    for (const s of await Promise.all(Array.from({ length: 10 }, refusedUnread))) statuses.add(s);
    return (await metricValue(gw.url, 'goodput_autoscale_signal', { signal: 'arrival_rps' })) > 0;
  }, 200);
  assert.deepEqual([...statuses], [504]);
});

test('an operator freezes the autoscaler and thaws it (PUT /admin/autoscale, admin token)', async () => {
  const backends = await engines(2);
  const gw = await gateway(backends, 'goodput', { autoscale: AUTOSCALE, adminToken: 'ops-1' });
  const admin = { authorization: 'Bearer ops-1', 'content-type': 'application/json' };
  const put = (body: string, headers: Record<string, string> = admin) =>
    fetch(`${gw.url}/admin/autoscale`, { method: 'PUT', headers, body });

  assert.equal((await put('{"frozen":true}', { 'content-type': 'application/json' })).status, 401);
  const bad = await put('{"frozen":"yes"}');
  assert.equal(bad.status, 400);
  assert.match(
    ((await bad.json()) as { error: { message: string } }).error.message,
    /frozen: expected true or false, got "yes"/,
  );

  assert.deepEqual(await (await put('{"frozen":true}')).json(), { frozen: true });
  assert.equal(await metricValue(gw.url, 'goodput_autoscale_frozen', {}), 1);
  await until(
    async () =>
      (await metricValue(gw.url, 'goodput_autoscale_decisions_total', { reason: 'frozen' })) >= 3,
  );
  assert.equal(
    await metricValue(gw.url, 'goodput_desired_replicas', { pool: 'default' }),
    2,
    'held at the groups there are',
  );

  assert.deepEqual(await (await put('{"frozen":false}')).json(), { frozen: false });
  assert.equal(await metricValue(gw.url, 'goodput_autoscale_frozen', {}), 0);
  const state = await fetch(`${gw.url}/admin/autoscale`, { headers: admin });
  assert.deepEqual(await state.json(), { frozen: false });
});

test('/admin/autoscale without an autoscaler, or an unknown decision: 404 saying so, findable by its id', async () => {
  const gw = await gateway(await engines(1), 'goodput', { adminToken: 'ops-1' });
  const get = (path: string) =>
    fetch(`${gw.url}${path}`, { headers: { authorization: 'Bearer ops-1' } });
  for (const [path, says] of [
    ['/admin/autoscale', /no autoscaler/],
    ['/admin/decisions/no-such-request', /no decision recorded/],
  ] as const) {
    const r = await get(path);
    assert.equal(r.status, 404);
    assert.match(((await r.json()) as { error: { message: string } }).error.message, says);
    assert.equal(r.headers.get('x-goodput-reason'), 'not_found');
    const id = r.headers.get('x-goodput-request-id');
    assert.ok(id, `${path}: the 404 names its request id`);
    const record = (await (await get(`/admin/decisions/${id}`)).json()) as {
      admission?: { reason?: string; status?: number };
    };
    assert.deepEqual(
      [record.admission?.reason, record.admission?.status],
      ['not_found', 404],
      `${path}: its decision is recorded`,
    );
  }
});
