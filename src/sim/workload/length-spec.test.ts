import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isConfigError } from '../../core/errors.ts';
import { formatLengthSpec, jointTable, parseLengthSpec } from './length-spec.ts';

test('parses every kind of length spec', () => {
  assert.deepEqual(parseLengthSpec('fixed:128', '--input'), { kind: 'fixed', value: 128 });
  assert.deepEqual(parseLengthSpec('uniform:1:2048', '--input'), {
    kind: 'uniform',
    min: 1,
    max: 2048,
  });
  assert.deepEqual(parseLengthSpec('uniform:7:7', '--input'), { kind: 'uniform', min: 7, max: 7 });
  assert.deepEqual(parseLengthSpec('exp:300.5', '--output'), { kind: 'exp', mean: 300.5 });
  assert.deepEqual(parseLengthSpec(' sharegpt-sarathi ', '--output'), {
    kind: 'table',
    name: 'sharegpt-sarathi',
  });
  assert.deepEqual(parseLengthSpec('sharegpt-vllm', '--input'), {
    kind: 'table',
    name: 'sharegpt-vllm',
  });
});

test('formats a spec back to its canonical text', () => {
  const texts = ['fixed:128', 'uniform:1:2048', 'exp:300.5', 'sharegpt-vllm', 'sharegpt-sarathi'];
  for (const text of texts) {
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
  'sharegpt-vllm:1',
  'sharegpt-other',
  'normal:5:1',
]) {
  test(`rejects ${JSON.stringify(bad)} naming the option and the value`, () => {
    assert.throws(
      () => parseLengthSpec(bad, '--output'),
      (e) => isConfigError(e) && e.path === '--output' && e.message.includes(JSON.stringify(bad)),
    );
  });
}

test('plain sharegpt is refused, naming both tables and what each is', () => {
  assert.throws(
    () => parseLengthSpec('sharegpt', '--input'),
    (e) =>
      isConfigError(e) &&
      e.path === '--input' &&
      e.got === 'sharegpt' &&
      /`sharegpt-vllm` \(vLLM bench's ShareGPT first turns[^)]*≈215/.test(e.expected) &&
      /`sharegpt-sarathi` \(Sarathi-Serve's multi-turn ShareGPT[^)]*≈2,340/.test(e.expected),
  );
});

test('only two specs naming the same table draw jointly', () => {
  const spec = (text: string) => parseLengthSpec(text, '--input');
  const vllm = spec('sharegpt-vllm');
  const sarathi = spec('sharegpt-sarathi');
  assert.equal(jointTable(vllm, vllm), 'sharegpt-vllm');
  assert.equal(jointTable(sarathi, sarathi), 'sharegpt-sarathi');
  assert.equal(jointTable(vllm, sarathi), undefined);
  assert.equal(jointTable(vllm, spec('fixed:5')), undefined);
});
