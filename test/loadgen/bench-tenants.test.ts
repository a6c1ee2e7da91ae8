// `goodput bench` as several tenants of a gateway that asks for keys: each request is sent with
// its tenant's key (`--tenant-key`), and the served model is found with one of them when no
// other key is given — the gateway lists its models only to a key it knows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { runBench } from '../../src/loadgen/run-bench.ts';
import { wallClock } from '../../src/runtime/wall-clock.ts';
import { wallTimers } from '../../src/runtime/wall-timers.ts';
import { engines, gateway, metricValue, policyWith } from '../gateway/gateway-kit.ts';

const sha = (key: string) => createHash('sha256').update(key).digest('hex');

test("bench with tenants' keys alone: the model found with one, each request under its tenant", async () => {
  const policy = policyWith({
    tenants: {
      'tenant-0': { api_keys_sha256: [sha('sk-zero')] },
      'tenant-1': { api_keys_sha256: [sha('sk-one')] },
    },
  });
  const gw = await gateway(await engines(1), policy);
  const run = await runBench(
    {
      baseUrl: gw.url,
      endpoint: 'completions',
      workload: {
        rate: Infinity,
        numRequests: 12,
        input: 'fixed:20',
        output: 'fixed:4',
        tenants: 'zipf:2:0',
      },
      tenantKeys: new Map([
        ['tenant-0', 'sk-zero'],
        ['tenant-1', 'sk-one'],
      ]),
      seed: 1,
      sendClass: false,
      percentiles: [99],
      timeoutMs: 30_000,
    },
    { clock: wallClock, timers: wallTimers() },
  );
  assert.equal(run.metrics.completed, 12, JSON.stringify(run.metrics.failed_by_reason));
  const admitted = (tenant: string) =>
    metricValue(gw.url, 'goodput_admission_decisions_total', { outcome: 'admit', tenant });
  const [zero, one] = [await admitted('tenant-0'), await admitted('tenant-1')];
  assert.equal(zero + one, 12);
  assert.ok(zero > 0 && one > 0, `${zero} and ${one}`);
});
