import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolvePolicy } from '../core/config/policy.ts';
import { adminTokenMatches, apiKeys, basicPassword, bearerToken, sha256 } from './api-keys.ts';

const hex = (key: string) => sha256(key).toString('hex');

const doc = {
  name: 'k',
  policy_revision: 'k@1',
  admission: { type: 'goodput' },
  routing: { type: 'least-request' },
  tenants: {
    acme: { api_keys_sha256: [hex('sk-acme-1'), hex('sk-acme-2')], classes: ['batch'] },
    globex: { api_keys_sha256: [hex('sk-globex')] },
  },
};
const policy = resolvePolicy(doc);

test('keys map to their tenant; unknown, empty and near-miss keys to none', () => {
  const keys = apiKeys(policy);
  assert.equal(keys.required, true);
  assert.equal(keys.tenantOf('sk-acme-1'), 'acme');
  assert.equal(keys.tenantOf('sk-acme-2'), 'acme');
  assert.equal(keys.tenantOf('sk-globex'), 'globex');
  for (const bad of ['', 'sk-acme', 'sk-acme-1 ', 'SK-ACME-1'])
    assert.equal(keys.tenantOf(bad), undefined);
});

test('a key authenticates as one tenant: a digest listed twice is refused where it is listed again', () => {
  const twice = (tenants: Record<string, unknown>) => () =>
    resolvePolicy({
      name: 'd',
      policy_revision: 'd@1',
      admission: { type: 'goodput' },
      routing: { type: 'least-request' },
      tenants,
    });
  assert.throws(
    twice({ a: { api_keys_sha256: [hex('k1')] }, b: { api_keys_sha256: [hex('k2'), hex('k1')] } }),
    /tenants\.b\.api_keys_sha256\[1\]: expected a key digest listed once \(it is tenant a's too\)/,
  );
  assert.throws(
    twice({ a: { api_keys_sha256: [hex('k1'), hex('k1')] } }),
    /tenants\.a\.api_keys_sha256\[1\]: expected a key digest listed once \(it is listed twice here\)/,
  );
});

test("a reloaded directory's keys are the ones checked from then on", () => {
  const running = resolvePolicy(doc);
  const keys = apiKeys(running);
  assert.equal(keys.tenantOf('sk-globex'), 'globex');
  running.tenants.replace(
    resolvePolicy({
      name: 'k',
      policy_revision: 'k@2',
      admission: { type: 'goodput' },
      routing: { type: 'least-request' },
      tenants: { globex: { api_keys_sha256: [hex('sk-globex-2')] } },
    }).tenants,
  );
  assert.equal(keys.tenantOf('sk-globex'), undefined);
  assert.equal(keys.tenantOf('sk-globex-2'), 'globex');
  assert.equal(keys.tenantOf('sk-acme-1'), undefined);
});

test('a policy without keys requires none', () => {
  const open = resolvePolicy({
    name: 'o',
    policy_revision: 'o@1',
    admission: { type: 'goodput' },
    routing: { type: 'least-request' },
  });
  assert.equal(apiKeys(open).required, false);
});

test('a tenant default class must be one it is granted', () => {
  assert.equal(policy.tenants.named.get('acme')?.defaultClass, 'batch');
  assert.throws(
    () =>
      resolvePolicy({
        name: 'b',
        policy_revision: 'b@1',
        admission: { type: 'goodput' },
        routing: { type: 'least-request' },
        tenants: { x: { classes: ['batch'], default_class: 'interactive' } },
      }),
    /tenants\.x: expected a default_class among the granted classes/,
  );
  assert.throws(
    () =>
      resolvePolicy({
        name: 'b',
        policy_revision: 'b@1',
        admission: { type: 'goodput' },
        routing: { type: 'least-request' },
        tenants: { x: { api_keys_sha256: ['not-a-digest'] } },
      }),
    /tenants\.x\.api_keys_sha256\[0\]: expected a lowercase hex SHA-256 digest, got "not-a-digest"/,
  );
});

test('admin token: exact match only', () => {
  assert.equal(adminTokenMatches('t0ken', 't0ken'), true);
  assert.equal(adminTokenMatches('t0ke', 't0ken'), false);
  assert.equal(adminTokenMatches(undefined, 't0ken'), false);
});

test('the Bearer and Basic schemes are matched in any case; an empty credential is none', () => {
  for (const scheme of ['Bearer', 'bearer', 'BEARER'])
    assert.equal(bearerToken(`${scheme} sk-1`), 'sk-1');
  for (const bad of [undefined, null, '', 'Bearer', 'Bearer ', 'Token sk-1', 'Bearersk-1'])
    assert.equal(bearerToken(bad), undefined);
  const basic = Buffer.from('any:admin-secret').toString('base64');
  assert.equal(basicPassword(`basic ${basic}`), 'admin-secret');
  assert.equal(basicPassword(`Basic ${basic}`), 'admin-secret');
  assert.equal(basicPassword(`Bearer ${basic}`), undefined);
});
