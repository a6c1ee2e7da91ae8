// What a running gateway takes from its policy file again: tenants under a new revision, and
// nothing that only a restart applies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolvePolicy } from '../core/config/policy.ts';
import { planReload, type PolicyDocument } from './reload-plan.ts';

const KEY_A = 'a'.repeat(64);
const KEY_B = 'b'.repeat(64);

function doc(over: Record<string, unknown> = {}): PolicyDocument {
  const d = {
    name: 'prod',
    policy_revision: 'prod@1',
    admission: { type: 'goodput' },
    routing: { type: 'least-request' },
    tenants: { acme: { weight: 2, api_keys_sha256: [KEY_A] } },
    ...over,
  };
  return { doc: d, policy: resolvePolicy(d) };
}

test('the same file, or one that only writes a default out or reorders keys, changes nothing', () => {
  assert.deepEqual(planReload(doc(), doc()), { kind: 'unchanged' });
  const spelled = doc({
    routing: { seed: 1, type: 'least-request' },
    tenants: { acme: { api_keys_sha256: [KEY_A], weight: 2, retry_budget_ratio: 0.2 } },
    description: 'said differently',
  });
  assert.deepEqual(planReload(doc(), spelled), { kind: 'unchanged' });
});

test('a new revision applies: with new tenants, or alone', () => {
  const rotated = doc({
    policy_revision: 'prod@2',
    tenants: { acme: { weight: 2, api_keys_sha256: [KEY_B] }, beta: { weight: 1 } },
  });
  assert.deepEqual(planReload(doc(), rotated), { kind: 'apply', tenantsChanged: true });
  assert.deepEqual(planReload(doc(), doc({ policy_revision: 'prod@2' })), {
    kind: 'apply',
    tenantsChanged: false,
  });
});

test('new tenants under the same revision are refused: records could not tell the two apart', () => {
  const plan = planReload(
    doc(),
    doc({ tenants: { acme: { weight: 5, api_keys_sha256: [KEY_A] } } }),
  );
  assert.equal(plan.kind, 'refused');
  assert.equal(plan.kind === 'refused' && plan.code, 'revision_unchanged');
  assert.match(plan.kind === 'refused' ? plan.message : '', /same policy_revision "prod@1"/);
});

test('a change to any other section is refused by name: only a restart applies it', () => {
  const plan = planReload(
    doc(),
    doc({
      policy_revision: 'prod@2',
      admission: { type: 'admit-all' },
      routing: { type: 'round-robin' },
      classes: { interactive: { ttft_ms: 1500 } },
    }),
  );
  assert.equal(plan.kind, 'refused');
  if (plan.kind !== 'refused') return;
  assert.equal(plan.code, 'restart_required');
  // Dispatch too, though the file names none: admit-all's default is immediate.
  assert.deepEqual([...plan.sections].sort(), [
    'admission',
    'classes',
    'dispatch',
    'routing',
    'slos',
  ]);
  assert.match(plan.message, /reloads only tenants, policy_revision, description; restart/);
});

test('a file that takes every API key away is refused: the gateway would stop asking for one', () => {
  const open = doc({ policy_revision: 'prod@2', tenants: { acme: { weight: 2 } } });
  const plan = planReload(doc(), open);
  assert.equal(plan.kind === 'refused' && plan.code, 'keys_removed');
  // A policy that had none may gain some.
  assert.deepEqual(planReload(open, doc({ policy_revision: 'prod@3' })), {
    kind: 'apply',
    tenantsChanged: true,
  });
});
