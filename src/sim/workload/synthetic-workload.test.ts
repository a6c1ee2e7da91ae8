import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LlmRequest } from '../../core/request/request.ts';
import { SeededRng } from '../../runtime/seeded-rng.ts';
import { parseClassSpec } from './class-spec.ts';
import { parseLengthSpec } from './length-spec.ts';
import { lengthTable } from './sharegpt-lengths.ts';
import { syntheticRequests, type SyntheticPlan } from './synthetic-workload.ts';
import { parseTenantSpec } from './tenant-spec.ts';

function plan(
  over: Partial<Record<'input' | 'output' | 'tenants' | 'classes', string>> & {
    rate?: number;
    burstiness?: number;
    count?: number;
  } = {},
): SyntheticPlan {
  return {
    arrivals: {
      rateRps: over.rate ?? 10,
      burstiness: over.burstiness ?? 1,
      count: over.count ?? 2000,
    },
    input: parseLengthSpec(over.input ?? 'uniform:10:1000', '--input'),
    output: parseLengthSpec(over.output ?? 'exp:200', '--output'),
    tenants: parseTenantSpec(over.tenants ?? 'zipf:20:1.1'),
    classes: parseClassSpec(over.classes ?? 'interactive:0.8,batch:0.2'),
    tables: { 'sharegpt-sarathi': lengthTable('sharegpt-sarathi') },
  };
}

function run(p: SyntheticPlan, seed = 42): LlmRequest[] {
  return [...syntheticRequests(p, new SeededRng(seed))];
}

const pick = <K extends keyof LlmRequest>(rs: LlmRequest[], k: K): LlmRequest[K][] =>
  rs.map((r) => r[k]);

test('requests are sorted, with unique stable ids and the planned count', () => {
  const rs = run(plan());
  assert.equal(rs.length, 2000);
  assert.equal(rs[0].id, 'r000001');
  assert.equal(rs[1999].id, 'r002000');
  assert.equal(new Set(pick(rs, 'id')).size, 2000);
  for (let i = 1; i < rs.length; i++) assert.ok(rs[i].arrivalMs >= rs[i - 1].arrivalMs);
  assert.ok(Math.abs(rs[1999].arrivalMs - 200_000) < 1e-6);
  for (const r of rs) {
    assert.ok(r.inputTokens >= 10 && r.inputTokens <= 1000);
    assert.ok(r.outputTokens >= 1);
    assert.equal(r.session, undefined);
    assert.equal(r.prefix, undefined);
  }
});

test('same seed, same stream; iterating again replays it; another seed differs', () => {
  const p = plan();
  const it = syntheticRequests(p, new SeededRng(42));
  const a = [...it];
  assert.deepEqual([...it], a);
  assert.deepEqual(run(p), a);
  assert.notDeepEqual(pick(run(p, 43), 'arrivalMs'), pick(a, 'arrivalMs'));
});

test('each aspect has its own stream: changing one option leaves the others alone', () => {
  const base = run(plan());
  const otherOutput = run(plan({ output: 'sharegpt-sarathi' }));
  assert.deepEqual(pick(otherOutput, 'arrivalMs'), pick(base, 'arrivalMs'));
  assert.deepEqual(pick(otherOutput, 'inputTokens'), pick(base, 'inputTokens'));
  assert.deepEqual(pick(otherOutput, 'tenant'), pick(base, 'tenant'));
  assert.deepEqual(pick(otherOutput, 'sloClass'), pick(base, 'sloClass'));
  assert.notDeepEqual(pick(otherOutput, 'outputTokens'), pick(base, 'outputTokens'));

  const otherClasses = run(plan({ classes: 'batch:1,reasoning:1' }));
  assert.deepEqual(pick(otherClasses, 'tenant'), pick(base, 'tenant'));
  assert.deepEqual(pick(otherClasses, 'outputTokens'), pick(base, 'outputTokens'));

  const otherTenants = run(plan({ tenants: 'zipf:3:0' }));
  assert.deepEqual(pick(otherTenants, 'sloClass'), pick(base, 'sloClass'));
  assert.deepEqual(pick(otherTenants, 'arrivalMs'), pick(base, 'arrivalMs'));

  const burstier = run(plan({ burstiness: 0.3 }));
  assert.deepEqual(pick(burstier, 'inputTokens'), pick(base, 'inputTokens'));
  assert.notDeepEqual(pick(burstier, 'arrivalMs'), pick(base, 'arrivalMs'));

  // Doubling the rate replays the same gaps at half the length.
  const faster = run(plan({ rate: 20 }));
  faster.forEach((r, i) => assert.ok(Math.abs(r.arrivalMs * 2 - base[i].arrivalMs) < 1e-6));
});

test('1,000,000 requests stream through without being held', () => {
  const requests = syntheticRequests(
    plan({
      count: 1_000_000,
      rate: 1000,
      burstiness: 0.5,
      input: 'sharegpt-sarathi',
      output: 'sharegpt-sarathi',
    }),
    new SeededRng(1),
  );
  assert.ok(!Array.isArray(requests));
  const heapBefore = process.memoryUsage().heapUsed;
  let n = 0;
  let peak = 0;
  let last = -1;
  for (const r of requests) {
    assert.ok(r.arrivalMs >= last);
    last = r.arrivalMs;
    if (++n % 100_000 === 0) peak = Math.max(peak, process.memoryUsage().heapUsed - heapBefore);
  }
  assert.equal(n, 1_000_000);
  // A million retained requests would take well over 100 MB.
  assert.ok(peak < 64 * 1024 * 1024, `heap grew ${peak} bytes`);
});
