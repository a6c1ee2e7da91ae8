import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolvePolicy } from './policy.ts';
import { PRESETS, presetPolicy } from './presets.ts';
import { isConfigError } from '../errors.ts';

const valid = {
  name: 'p',
  policy_revision: 'r1',
  admission: { type: 'admit-all' },
  routing: { type: 'least-request' },
};

test('every preset validates', () => {
  for (const name of Object.keys(PRESETS)) assert.equal(presetPolicy(name).name, name);
});

test('class overrides replace only what they name', () => {
  const p = resolvePolicy({ ...valid, classes: { interactive: { ttft_ms: 500 } } });
  assert.equal(p.classes.interactive.objectives.ttftMs, 500);
  assert.equal(p.classes.interactive.objectives.itlP99Ms, 80);
  assert.equal(p.classes.batch.objectives.e2eMs, 3_600_000);
});

const invalid: Array<[string, unknown, string]> = [
  [
    'unknown router',
    { ...valid, routing: { type: 'fastest' } },
    'routing.type: expected one of round-robin, least-request, got "fastest"',
  ],
  [
    'negative objective',
    { ...valid, classes: { batch: { e2e_ms: -5 } } },
    'classes.batch.e2e_ms: expected a number ≥ 0, got -5',
  ],
  [
    'unknown class',
    { ...valid, classes: { vip: { ttft_ms: 1 } } },
    'classes: expected no unknown keys (vip)',
  ],
  [
    'missing revision',
    { ...valid, policy_revision: undefined },
    'policy_revision: expected a string, got nothing',
  ],
  ['unknown key', { ...valid, speed: 'max' }, '(root): expected no unknown keys (speed)'],
];

for (const [name, input, message] of invalid) {
  test(`rejects ${name} naming path and value`, () => {
    assert.throws(
      () => resolvePolicy(input),
      (e: unknown) => isConfigError(e) && e.message.startsWith(message),
    );
  });
}

test('unknown preset names the choices', () => {
  assert.throws(
    () => presetPolicy('fast'),
    /policy: expected a preset \(baseline-vllm, least-request\) or a policy file, got "fast"/,
  );
});
