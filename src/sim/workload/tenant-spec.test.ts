import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isConfigError } from '../../core/errors.ts';
import { SeededRng } from '../../runtime/seeded-rng.ts';
import { formatTenantSpec, parseTenantSpec, tenantSampler } from './tenant-spec.ts';

test('parses a single name and a zipf spec', () => {
  assert.deepEqual(parseTenantSpec('default'), { kind: 'single', name: 'default' });
  assert.deepEqual(parseTenantSpec('team.a-1'), { kind: 'single', name: 'team.a-1' });
  assert.deepEqual(parseTenantSpec('zipf:100:1.2'), { kind: 'zipf', count: 100, exponent: 1.2 });
  assert.equal(formatTenantSpec(parseTenantSpec('zipf:100:1.2')), 'zipf:100:1.2');
});

for (const bad of [
  '',
  'a b',
  'zipf:0:1',
  'zipf:1.5:1',
  'zipf:10',
  'zipf:10:-1',
  'zipf:10:x',
  'uniform:3:1',
  'zipf:2000000:1',
]) {
  test(`rejects tenants ${JSON.stringify(bad)}`, () => {
    assert.throws(
      () => parseTenantSpec(bad),
      (e) => isConfigError(e) && e.path === '--tenants',
    );
  });
}

test('a single tenant draws nothing', () => {
  const rng = new SeededRng(1);
  const draw = tenantSampler(parseTenantSpec('acme'), rng);
  assert.equal(draw(), 'acme');
  assert.equal(rng.next(), new SeededRng(1).next(), 'rng untouched');
});

test('zipf:10:1 gives tenant-k a share ∝ 1/(k+1)', () => {
  const n = 200_000;
  const draw = tenantSampler(parseTenantSpec('zipf:10:1'), new SeededRng(5));
  const counts = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const t = draw();
    counts.set(t, (counts.get(t) ?? 0) + 1);
  }
  assert.equal(counts.size, 10);
  let h = 0;
  for (let k = 1; k <= 10; k++) h += 1 / k;
  for (let k = 0; k < 10; k++) {
    const share = (counts.get(`tenant-${k}`) ?? 0) / n;
    assert.ok(Math.abs(share - 1 / (k + 1) / h) < 0.005, `tenant-${k}: ${share}`);
  }
  // The skew: the heaviest tenant sends about ten times the lightest.
  const ratio = counts.get('tenant-0')! / counts.get('tenant-9')!;
  assert.ok(ratio > 9 && ratio < 11, `ratio ${ratio}`);
});

test('zipf with exponent 0 is uniform', () => {
  const draw = tenantSampler(parseTenantSpec('zipf:4:0'), new SeededRng(6));
  const counts = new Map<string, number>();
  for (let i = 0; i < 40_000; i++) {
    const t = draw();
    counts.set(t, (counts.get(t) ?? 0) + 1);
  }
  assert.equal(counts.size, 4);
  for (const c of counts.values()) assert.ok(Math.abs(c - 10_000) < 500);
});
