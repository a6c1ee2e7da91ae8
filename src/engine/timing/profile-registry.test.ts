// The profile registry: const specs, named and default fitted profiles, and clear errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isConfigError } from '../../core/errors.ts';
import { ConstProfile } from './const-profile.ts';
import { FittedProfile } from './fitted-profile.ts';
import { listProfiles, resolveProfile } from './profile-registry.ts';

const base = { model: 'llama-3-8b', gpu: 'h100', tp: 1 };

test('lists the committed profiles by name', () => {
  const names = listProfiles();
  assert.deepEqual(names, [...names].sort());
  for (const n of [
    'llama-3-8b/a100/tp1',
    'llama-3-8b/h100/tp1',
    'llama-2-70b/h100/tp4',
    'llama-2-70b/h100/tp8',
  ]) {
    assert.ok(names.includes(n), n);
  }
  for (const n of names) assert.match(n, /^[a-z0-9.-]+\/(a100|h100)\/tp\d+$/);
});

test('defaults to the fitted profile of the model, GPU and TP', () => {
  const p = resolveProfile(base);
  assert.ok(p instanceof FittedProfile);
  assert.equal(p.name, 'llama-3-8b/h100/tp1');
  assert.equal(resolveProfile({ ...base, profile: '' }).name, 'llama-3-8b/h100/tp1');
  // Loaded once: profiles are immutable.
  assert.equal(resolveProfile(base), p);
});

test('a named profile wins over the model, GPU and TP', () => {
  assert.equal(
    resolveProfile({ ...base, profile: 'llama-2-70b/h100/tp8' }).name,
    'llama-2-70b/h100/tp8',
  );
});

test('const specs', () => {
  const p = resolveProfile({ ...base, profile: 'const:step_ms=10' });
  assert.ok(p instanceof ConstProfile);
  assert.equal(p.name, 'const:step_ms=10');
  assert.throws(() => resolveProfile({ ...base, profile: 'const:step_ms=x' }), isConfigError);
});

test('unknown profiles and combinations list what is available', () => {
  const lists = (e: unknown) =>
    isConfigError(e) &&
    e.path === 'profile' &&
    e.message.includes('llama-3-8b/a100/tp1') &&
    e.message.includes('llama-2-70b/h100/tp4');
  assert.throws(
    () => resolveProfile({ ...base, tp: 3 }),
    (e) => lists(e) && /"llama-3-8b\/h100\/tp3"/.test((e as Error).message),
  );
  assert.throws(() => resolveProfile({ model: 'gpt-2', gpu: 'a100', tp: 1 }), lists);
  assert.throws(() => resolveProfile({ ...base, profile: 'llama-3-8b/h200/tp1' }), lists);
  assert.throws(() => resolveProfile({ ...base, profile: '../../etc/passwd' }), lists);
});
