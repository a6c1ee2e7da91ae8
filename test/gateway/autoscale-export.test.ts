// The gateway runs the autoscaler and exports its decision for an external actuator (KEDA, an
// HPA on external metrics): goodput_desired_replicas{pool}, the signals behind it, and a count
// of decisions by reason — from its own counts of offered and good requests and its backends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { engines, gateway, metricValue, until } from './gateway-kit.ts';

test('goodput_desired_replicas and its signals are exported, within the limits', async () => {
  const backends = await engines(2);
  const gw = await gateway(backends, 'goodput', {
    autoscale: {
      type: 'goodput',
      limits: {
        minReplicas: 2,
        maxReplicas: 6,
        readyTimeMs: 120_000,
        tickMs: 50,
        headroom: 1.5,
        scaleInWindowMs: 300_000,
      },
    },
  });
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
