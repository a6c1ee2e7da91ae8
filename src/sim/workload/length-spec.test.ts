import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isConfigError } from '../../core/errors.ts';
import { formatLengthSpec, parseLengthSpec } from './length-spec.ts';

test('parses every kind of length spec', () => {
  assert.deepEqual(parseLengthSpec('fixed:128', '--input'), { kind: 'fixed', value: 128 });
  assert.deepEqual(parseLengthSpec('uniform:1:2048', '--input'), {
    kind: 'uniform',
    min: 1,
    max: 2048,
  });
  assert.deepEqual(parseLengthSpec('uniform:7:7', '--input'), { kind: 'uniform', min: 7, max: 7 });
  assert.deepEqual(parseLengthSpec('exp:300.5', '--output'), { kind: 'exp', mean: 300.5 });
  assert.deepEqual(parseLengthSpec(' sharegpt ', '--output'), { kind: 'sharegpt' });
});

test('formats a spec back to its canonical text', () => {
  for (const text of ['fixed:128', 'uniform:1:2048', 'exp:300.5', 'sharegpt']) {
    assert.equal(formatLengthSpec(parseLengthSpec(text, '--input')), text);
  }
});

for (const bad of [
  '',
  'fixed',
  'fixed:0',
  'fixed:-3',
  'fixed:1.5',
  'fixed:12:3',
  'uniform:5',
  'uniform:9:3',
  'uniform:0:3',
  'uniform:a:3',
  'exp:0',
  'exp:-1',
  'exp:',
  'exp:abc',
  'exp:Infinity',
  'sharegpt:1',
  'normal:5:1',
]) {
  test(`rejects ${JSON.stringify(bad)} naming the option and the value`, () => {
    assert.throws(
      () => parseLengthSpec(bad, '--output'),
      (e) => isConfigError(e) && e.path === '--output' && e.message.includes(JSON.stringify(bad)),
    );
  });
}
