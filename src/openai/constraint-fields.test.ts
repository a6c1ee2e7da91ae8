// vLLM's constraints on a reply's form beside OpenAI's response_format: structured_outputs and
// the older guided_* fields, on both endpoints, with vLLM's rules (one constraint of one kind
// per reply, none beside a tool call required); refused by name where replies are filler.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseChatCompletionRequest } from './chat-request.ts';
import { parseCompletionRequest } from './completion-request.ts';
import { rejection } from './openai-test-kit.ts';
import { constraintsOf, unconstrainedOnly } from './constraint-fields.ts';

const CHAT = { model: 'm', messages: [{ role: 'user', content: 'Is vLLM fast?' }] };
const TEXT = { model: 'm', prompt: 'Is vLLM fast?' };
const SCHEMA = { type: 'object', properties: { yes: { type: 'boolean' } } };

const HELD: Record<string, unknown>[] = [
  { structured_outputs: { choice: ['yes', 'no'] } },
  { structured_outputs: { json: SCHEMA, disable_any_whitespace: true } },
  { structured_outputs: { json: JSON.stringify(SCHEMA) } },
  { structured_outputs: { regex: '(yes|no)\\.', whitespace_pattern: ' ?' } },
  { structured_outputs: { grammar: 'root ::= "yes" | "no"' } },
  { structured_outputs: { json_object: true, disable_fallback: false } },
  { structured_outputs: { structural_tag: '{"type": "structural_tag"}' } },
  { guided_choice: ['yes', 'no'] },
  { guided_json: SCHEMA, guided_decoding_backend: 'xgrammar' },
  { guided_regex: 'yes|no', guided_whitespace_pattern: ' ' },
  { guided_grammar: 'root ::= "yes"' },
  { response_format: { type: 'json_object' } },
];

test('each constraint vLLM takes parses as sent, on both endpoints, and is named as one', () => {
  for (const fields of HELD) {
    for (const [parse, base] of [
      [parseChatCompletionRequest, CHAT],
      [parseCompletionRequest, TEXT],
    ] as const) {
      const req = parse({ ...base, ...fields });
      assert.deepEqual(req, { ...base, ...fields });
      assert.deepEqual(constraintsOf(req), [Object.keys(fields)[0]]);
    }
  }
  assert.deepEqual(constraintsOf(parseCompletionRequest(TEXT)), []);
  assert.deepEqual(
    constraintsOf(parseCompletionRequest({ ...TEXT, response_format: { type: 'text' } })),
    [],
    'text is no constraint',
  );
});

test("a bad constraint is a 400 naming the field, with vLLM's rules", () => {
  const cases: [object, string, string][] = [
    [
      { structured_outputs: {} },
      'structured_outputs: expected one of json, regex, choice, grammar, json_object, structural_tag, got {}',
      'structured_outputs',
    ],
    [
      { structured_outputs: { json: SCHEMA, regex: 'a+' } },
      'structured_outputs.regex: expected absent beside json (one kind of constraint per reply), got "a+"',
      'structured_outputs.regex',
    ],
    [
      { structured_outputs: { choice: [] } },
      'structured_outputs.choice: expected a non-empty array of strings, got []',
      'structured_outputs.choice',
    ],
    [
      { structured_outputs: { json: 3 } },
      'structured_outputs.json: expected a JSON schema (an object), or its JSON text, got 3',
      'structured_outputs.json',
    ],
    [
      { structured_outputs: { regex: 'a+', pattern: 'a+' } },
      'structured_outputs.pattern: unknown field',
      'structured_outputs.pattern',
    ],
    [
      { guided_choice: ['yes', 4] },
      'guided_choice[1]: expected a string, got 4',
      'guided_choice[1]',
    ],
    [
      { response_format: { type: 'json_object' }, guided_choice: ['yes'] },
      'guided_choice: expected absent beside response_format (one constraint per reply), got ["yes"]',
      'guided_choice',
    ],
    [
      { structured_outputs: { regex: 'a' }, guided_regex: 'a' },
      'guided_regex: expected absent beside structured_outputs (one constraint per reply), got "a"',
      'guided_regex',
    ],
  ];
  for (const [fields, message, param] of cases) {
    for (const [parse, base] of [
      [parseChatCompletionRequest, CHAT],
      [parseCompletionRequest, TEXT],
    ] as const) {
      const err = rejection(() => parse({ ...base, ...fields }));
      assert.equal(err.message, message);
      assert.equal(err.param, param);
    }
  }
});

test('a reply held to a form is no tool call required, as vLLM refuses both', () => {
  const tools = [{ type: 'function', function: { name: 'f' } }];
  const held = { ...CHAT, tools, guided_choice: ['yes', 'no'] };
  for (const tool_choice of ['none', 'auto']) parseChatCompletionRequest({ ...held, tool_choice });
  const err = rejection(() => parseChatCompletionRequest({ ...held, tool_choice: 'required' }));
  assert.equal(
    err.message,
    'tool_choice: expected "none", "auto" or absent beside guided_choice (a reply held to a form is no tool call), got "required"',
  );
});

test('a server whose replies follow no form refuses each constraint by its field', () => {
  for (const fields of HELD) {
    const field = Object.keys(fields)[0];
    const err = rejection(() =>
      unconstrainedOnly(parseChatCompletionRequest({ ...CHAT, ...fields }), 'a filler'),
    );
    const neutral = field === 'response_format' ? '{"type":"text"} or absent' : 'absent';
    assert.ok(
      err.message.startsWith(`${field}: not supported by a filler (expected ${neutral}), got `),
      err.message,
    );
    assert.equal(err.param, field);
  }
});
