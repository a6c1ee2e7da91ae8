import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, InputError, formatValue } from './errors.ts';

test('a value is shown as JSON: strings quoted, nothing named', () => {
  assert.equal(formatValue('fast'), '"fast"');
  assert.equal(formatValue(-5), '-5');
  assert.equal(formatValue({ a: [1] }), '{"a":[1]}');
  assert.equal(formatValue(undefined), 'nothing');
});

test('a long value is cut to what names it, with its length: a 1 MB file is not repeated whole', () => {
  const e = new ConfigError('policy', 'a mapping', 'a'.repeat(1_000_000), 'p.yaml');
  assert.ok(e.message.length < 300, `${e.message.length} characters`);
  assert.match(
    e.message,
    /^p\.yaml: policy: expected a mapping, got "a{199}… \(1000002 characters\)$/,
  );
});

test("an input line's problem is cut too: a 2 MB class name is not said whole", () => {
  const e = new InputError(
    't.jsonl',
    3,
    'class',
    `expected a class name, got "${'c'.repeat(2e6)}"`,
  );
  assert.ok(e.message.length < 500, `${e.message.length} characters`);
  assert.match(
    e.message,
    /^t\.jsonl:3: class: expected a class name, got "c+… \(2000029 characters\)$/,
  );
});
