import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRng } from '../../../runtime/seeded-rng.ts';
import { parseClassSpec } from '../class-spec.ts';
import { parseTenantSpec } from '../tenant-spec.ts';
import { fixture } from './test-fixtures.ts';
import { loadTrace } from './load-trace.ts';
import { traceRequests, type TracePlan } from './trace-workload.ts';
import { selectWindow } from './trace-window.ts';

function plan(name: string, over: Partial<TracePlan> = {}): TracePlan {
  const table = loadTrace(fixture(name));
  return {
    table,
    window: selectWindow(table.tMs, 0, undefined),
    rateScale: 1,
    tenants: parseTenantSpec('default'),
    classes: parseClassSpec('interactive'),
    ...over,
  };
}

test('rows carry their own tenant, class, session, prefix and max tokens', () => {
  const rs = [...traceRequests(plan('native.jsonl'), new SeededRng(1))];
  assert.deepEqual(
    rs.map((r) => r.id),
    ['r000001', 'r000002', 'r000003', 'r000004'],
  );
  assert.deepEqual(rs[0], {
    id: 'r000001',
    arrivalMs: 0,
    inputTokens: 100,
    outputTokens: 10,
    tenant: 'default',
    sloClass: 'interactive',
  });
  assert.deepEqual(rs[2], {
    id: 'r000003',
    arrivalMs: 250,
    inputTokens: 64,
    outputTokens: 300,
    tenant: 'acme',
    sloClass: 'interactive',
    maxTokens: 512,
    session: 's1',
    prefix: { blockTokens: 32, hashes: ['1', '2'] },
  });
  assert.equal(rs[1].sloClass, 'batch');
  assert.equal(rs[3].sloClass, 'reasoning');
  assert.equal(rs[3].tenant, 'default');
});

test('rows without a tenant or class draw them from the specs, seeded', () => {
  const p = plan('azure-conv-200.csv', {
    tenants: parseTenantSpec('zipf:5:1'),
    classes: parseClassSpec('interactive:0.5,batch:0.5'),
  });
  const a = [...traceRequests(p, new SeededRng(3))];
  const b = [...traceRequests(p, new SeededRng(3))];
  assert.deepEqual(a, b);
  assert.ok(new Set(a.map((r) => r.tenant)).size > 1);
  assert.deepEqual(new Set(a.map((r) => r.sloClass)), new Set(['interactive', 'batch']));
  const c = [...traceRequests(p, new SeededRng(4))];
  assert.notDeepEqual(
    a.map((r) => r.tenant),
    c.map((r) => r.tenant),
  );
});

test('window and rate scale apply to arrivals; ids restart at the window', () => {
  const base = plan('azure-conv-200.csv');
  const window = selectWindow(base.table.tMs, 10, 30);
  const rs = [...traceRequests({ ...base, window, rateScale: 4 }, new SeededRng(1))];
  const inWindow = [...base.table.tMs].filter((t) => t >= 10_000 && t < 40_000);
  assert.equal(rs.length, inWindow.length);
  assert.equal(rs[0].id, 'r000001');
  rs.forEach((r, i) => assert.equal(r.arrivalMs, (inWindow[i] - 10_000) / 4));
  assert.ok(rs.at(-1)!.arrivalMs < 30_000 / 4);
});
