import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_JSON_DEPTH, checkJsonShape } from './json-shape.ts';
import { parseJsonText } from './validation.ts';
import { rejection } from './openai-test-kit.ts';

const nested = (depth: number, inner = '') => '['.repeat(depth) + inner + ']'.repeat(depth);

test('nesting up to MAX_JSON_DEPTH parses; one level more is a 400 naming where', () => {
  assert.equal(MAX_JSON_DEPTH, 32);
  assert.ok(Array.isArray(parseJsonText(nested(MAX_JSON_DEPTH))));
  assert.ok(parseJsonText(`{"a":${nested(MAX_JSON_DEPTH - 1)}}`));
  const cases: [string, string, string][] = [
    [nested(33), `request body: nesting deeper than 32 levels at ${'[0]'.repeat(32)}`, '[0]'],
    [
      `{"a":${nested(32)}}`,
      `request body: nesting deeper than 32 levels at a${'[0]'.repeat(31)}`,
      'a[0]',
    ],
    [
      `{"messages":[{"role":"user","content":[1,${nested(40)}]}]}`,
      // Cut at 100 characters.
      `request body: nesting deeper than 32 levels at messages[0].content[1]${'[0]'.repeat(26)}…`,
      'messages[0].content[1]',
    ],
    [
      // Objects count as levels too, and their keys name the path.
      `${'{"k":'.repeat(33)}1${'}'.repeat(33)}`,
      `request body: nesting deeper than 32 levels at k${'.k'.repeat(31)}`,
      'k.k',
    ],
  ];
  for (const [body, message, paramStart] of cases) {
    const err = rejection(() => parseJsonText(body));
    assert.equal(err.status, 400);
    assert.equal(err.code, 'invalid_value');
    assert.equal(err.message, message);
    assert.ok(err.param?.startsWith(paramStart), String(err.param));
  }
});

test('the 5,000-deep unknown field is refused before JSON.parse, with a short message', () => {
  const body = `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":3,"x":${nested(5000)}}`;
  const err = rejection(() => parseJsonText(body));
  assert.match(err.message, /^request body: nesting deeper than 32 levels at x\[0\]\[0\]/);
  assert.ok(err.message.length < 200);
  // A path longer than 100 characters is cut.
  const long = rejection(() => parseJsonText(`{"${'k'.repeat(300)}":${nested(40)}}`));
  assert.match(long.message, /at k{100}…$/);
});

test('brackets, braces, quotes and keys inside strings are not structure', () => {
  const cases = [
    `{"a":"${'['.repeat(100)}"}`,
    `{"a":"{\\"a\\":1,\\"a\\":2}"}`,
    `{"a":"\\\\","b":"${'{'.repeat(40)}\\\\"}`,
    `["\\"[[[[", "]]]]\\\\", ${nested(30)}]`,
    `{"a":["a","a"],"b":{"a":1},"c":[{"a":1},{"a":2}]}`,
  ];
  for (const body of cases) assert.doesNotThrow(() => checkJsonShape(body), body);
});

test('a duplicate key is a 400 naming the object and the key, compared by decoded value', () => {
  const cases: [string, string, string][] = [
    ['{"model":"a","model":"b"}', 'body: duplicate key "model"', 'model'],
    [
      '{"messages":[{"role":"user"},{"role":"user","content":"x","role":"system"}]}',
      'messages[1]: duplicate key "role"',
      'messages[1].role',
    ],
    ['{"a":1,"\\u0061":2}', 'body: duplicate key "a"', 'a'],
    ['{"x":{"\\"q":1,"\\u0022q":2}}', 'x: duplicate key "\\"q"', 'x."q'],
    ['{"a":{"b":1},"c":{"b":2,"d":{"b":3,"b":4}}}', 'c.d: duplicate key "b"', 'c.d.b'],
  ];
  for (const [body, message, param] of cases) {
    const err = rejection(() => parseJsonText(body));
    assert.equal(err.message, message, body);
    assert.equal(err.param, param);
  }
});

test('a lone surrogate anywhere, free-form objects and keys too, is a 400 naming where it is', () => {
  const schema = (description: string) =>
    `{"model":"m","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","description":"${description}"}}}]}`;
  const cases: [string, string][] = [
    [schema('a\\ud800b'), 'tools[0].function.parameters.description'],
    [schema('\\udc00'), 'tools[0].function.parameters.description'],
    ['{"chat_template_kwargs":{"\\ud800":"v"}}', 'chat_template_kwargs.\ud800'],
    ['{"metadata":{"k":["x","\\uDBFF"]}}', 'metadata.k[1]'],
  ];
  for (const [body, at] of cases) {
    const err = rejection(() => parseJsonText(body));
    assert.equal(err.status, 400);
    assert.equal(err.message, `${at}: expected well-formed Unicode text, got a lone surrogate`);
    assert.equal(err.param, at);
  }
  // A pair is one character; an escaped backslash before `ud800` is no escape.
  assert.ok(parseJsonText(schema('\\ud83d\\ude00')));
  assert.ok(parseJsonText(schema('\\\\ud800')));
});

test('text that is not JSON is left to JSON.parse to name', () => {
  for (const body of ['{"a":', '{"a":"unterminated', ']]]', '{"a\\x":1,"a\\x":2}']) {
    assert.doesNotThrow(() => checkJsonShape(body), body);
    assert.match(
      rejection(() => parseJsonText(body)).message,
      /^request body: expected valid JSON/,
    );
  }
});

test('a 4 MB body scans in a few milliseconds', () => {
  // A bound far above the expected time (well under 10 ms), only to catch an accidental
  // quadratic scan; benchmarks belong in bench/.
  const body = JSON.stringify({ model: 'm', prompt: 'x'.repeat(4_000_000) });
  checkJsonShape(body);
  const start = performance.now();
  checkJsonShape(body);
  assert.ok(performance.now() - start < 200);
});

test('each scan starts clean: a scan cut short by a refusal leaves nothing for the next', () => {
  // The scans share their frames; a duplicate throws with keys and depths still recorded.
  const dup = '{"messages":[{"role":"user","role":"x"}],"a":{"b":{"c":1,"c":2}}}';
  assert.equal(rejection(() => checkJsonShape(dup)).message, 'messages[0]: duplicate key "role"');
  // The same keys again, in objects of their own and at the same depths, are no duplicates.
  const ok = '{"messages":[{"role":"user"},{"role":"x"}],"a":{"b":{"c":1},"d":{"c":2}}}';
  assert.doesNotThrow(() => checkJsonShape(ok));
  assert.doesNotThrow(() => checkJsonShape(ok));
  // Nor does a scan that stopped too deep leave its depth behind.
  assert.equal(rejection(() => checkJsonShape(nested(40))).status, 400);
  assert.ok(Array.isArray(parseJsonText(nested(MAX_JSON_DEPTH))));
});
