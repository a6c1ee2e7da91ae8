// Bookkeeping that must hold on any run: every offered request ends in exactly one state, and
// every KV block is free at the end. Scenarios push the engine into preemption, client
// timeouts, retries and failures to make the accounting work for it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { run } from './helpers.ts';

const scenarios = {
  'light load': { rate: 5, numRequests: 400 },
  // A cache of 6,400 tokens holds one sequence of the context, as vLLM requires to start.
  'overload with a tiny KV cache (preemption)': {
    rate: 80,
    numRequests: 800,
    kvBlocks: 400,
    maxModelLen: 6_400,
    maxNumSeqs: 64,
  },
  'swap preemption': {
    rate: 80,
    numRequests: 800,
    kvBlocks: 400,
    maxModelLen: 6_400,
    preemption: 'swap' as const,
  },
  'client timeouts with retries': {
    rate: 120,
    numRequests: 1_500,
    clientTimeoutMs: 4_000,
    maxAttempts: 3,
  },
  'prompts past the context fail': {
    rate: 20,
    numRequests: 300,
    input: 'uniform:100:9000',
    output: 'fixed:20',
    kvBlocks: 300,
    maxModelLen: 4_800,
  },
  'several replicas, tenants and classes': {
    rate: 60,
    numRequests: 1_200,
    replicas: 3,
    tenants: 'zipf:5:1.2',
    classes: 'interactive:0.5,batch:0.3,best_effort:0.2',
  },
};

for (const [name, spec] of Object.entries(scenarios)) {
  for (const policy of ['baseline-vllm', 'least-request']) {
    test(`${name} (${policy}): offered = completed + failed + cancelled + rejected + running`, () => {
      const r = run(spec, policy);
      assert.equal(
        r.completed + r.failed + r.cancelled + r.admission.rejected + r.running,
        r.offered.requests,
      );
      assert.equal(r.engine.kv_used_blocks_at_end, 0, 'KV blocks leaked');
      assert.ok(r.slo.attainment_offered <= r.slo.attainment_admitted);
      const tenantRequests = Object.values(r.tenants).reduce((s, t) => s + t.requests, 0);
      assert.equal(tenantRequests, r.offered.requests);
      const classRequests = Object.values(r.slo.by_class).reduce(
        (s, c) => s + (c as { requests: number }).requests,
        0,
      );
      assert.equal(classRequests, r.offered.requests);
    });
  }
}

test('the scenarios above exercise what they claim', () => {
  assert.ok(run(scenarios['overload with a tiny KV cache (preemption)']).engine.preemptions > 0);
  const t = run(scenarios['client timeouts with retries']);
  assert.ok(t.client.timeouts > 0 && t.client.retries > 0 && t.client.retry_amplification > 1);
  assert.ok(run(scenarios['prompts past the context fail']).failed > 0);
});
