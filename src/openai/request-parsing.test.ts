import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseChatCompletionRequest } from './chat-request.ts';
import { parseCompletionRequest, promptList } from './completion-request.ts';
import { MAX_TOKEN_ID, messageText } from './prompt-tokens.ts';
import { includeUsage, outputLimit } from './request-fields.ts';
import { unconstrainedOnly } from './constraint-fields.ts';
import { fieldPath, parseJsonText } from './validation.ts';
import { rejection } from './openai-test-kit.ts';

test('a full chat request parses; nulls count as absent', () => {
  const req = parseChatCompletionRequest({
    model: 'm',
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'developer', content: 'in English' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
      { role: 'assistant', content: null },
      { role: 'tool', content: '42', tool_call_id: 'call_1' },
    ],
    max_tokens: null,
    max_completion_tokens: 7,
    stream: true,
    stream_options: { include_usage: true },
    temperature: 0.7,
    top_p: 1,
    n: 1,
    stop: ['\n'],
    seed: 42,
    user: 'u1',
    ignore_eos: true,
    top_k: -1,
    min_p: 0.05,
    repetition_penalty: 1.1,
    min_tokens: 7,
  });
  assert.equal(req.messages[1].role, 'developer');
  assert.equal(messageText(req.messages[2]), 'a\nb');
  assert.equal(messageText(req.messages[3]), '');
  assert.equal(req.messages[4].tool_call_id, 'call_1');
  assert.deepEqual(outputLimit(req), { tokens: 7, field: 'max_completion_tokens' });
  assert.equal(includeUsage(req), true);
});

test('a completion prompt takes the four forms vLLM accepts', () => {
  const cases: [unknown, readonly (string | readonly number[])[]][] = [
    ['x', ['x']],
    ['', ['']],
    [
      ['x', 'y'],
      ['x', 'y'],
    ],
    [[1, 2, 3], [[1, 2, 3]]],
    [
      [[1, 2], [3]],
      [[1, 2], [3]],
    ],
    [[0, MAX_TOKEN_ID], [[0, MAX_TOKEN_ID]]],
  ];
  for (const [prompt, list] of cases) {
    assert.deepEqual(promptList(parseCompletionRequest({ model: 'm', prompt })), list);
  }
});

test('a bad completion prompt names the element at fault', () => {
  const forms = 'a string, or a non-empty array of strings, of token ids or of token-id arrays';
  const cases: [unknown, string, string][] = [
    [undefined, `prompt: expected ${forms}, got nothing`, 'prompt'],
    [[], `prompt: expected ${forms}, got []`, 'prompt'],
    // The first element says which form the prompt is, and the element out of it is named.
    [['a', 1], 'prompt[1]: expected a string, got 1', 'prompt[1]'],
    [
      [1, -1],
      `prompt[1]: expected a token id (an integer in [0, ${MAX_TOKEN_ID}]), got -1`,
      'prompt[1]',
    ],
    [
      [1, 2.5],
      `prompt[1]: expected a token id (an integer in [0, ${MAX_TOKEN_ID}]), got 2.5`,
      'prompt[1]',
    ],
    [[{}], `prompt: expected ${forms}, got [{}]`, 'prompt'],
    [
      [MAX_TOKEN_ID + 1],
      `prompt[0]: expected a token id (an integer in [0, ${MAX_TOKEN_ID}]), got ${MAX_TOKEN_ID + 1}`,
      'prompt[0]',
    ],
    [[[1], []], 'prompt[1]: expected a non-empty array of token ids, got []', 'prompt[1]'],
    [
      [[1], [2, -3]],
      `prompt[1][1]: expected a token id (an integer in [0, ${MAX_TOKEN_ID}]), got -3`,
      'prompt[1][1]',
    ],
  ];
  for (const [prompt, message, param] of cases) {
    const err = rejection(() => parseCompletionRequest({ model: 'm', prompt }));
    assert.equal(err.message, message);
    assert.equal(err.status, 400);
    assert.equal(err.param, param);
  }
});

test('errors name the nested field, what it must be and the value', () => {
  const cases: [unknown, string][] = [
    [
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          { role: 'robot', content: 'y' },
        ],
      },
      'messages[1].role: expected one of system, developer, user, assistant, tool, got "robot"',
    ],
    [{ model: 'm', messages: ['hi'] }, 'messages[0]: expected a message object, got "hi"'],
    [
      { model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url' }] }] },
      'messages[0].content[0].image_url: expected an object ({"url": "…"}), got nothing',
    ],
    [
      { model: 'm', messages: [{ role: 'user', content: [] }] },
      'messages[0].content: expected a string or a non-empty array of content parts, got []',
    ],
    [
      { model: 'm', messages: [{ role: 'user' }] },
      'messages[0].content: expected a string or a non-empty array of content parts on a user message, got nothing',
    ],
    [
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: null },
          { role: 'tool', content: '42' },
        ],
      },
      'messages[2].tool_call_id: expected a string on a tool message (the id of the call it answers), got nothing',
    ],
    [
      { model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 1e300 },
      'max_tokens: expected an integer in [1, 1048576], got 1e+300',
    ],
    [
      {
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
        stream_options: { include_usage: 1 },
      },
      'stream_options.include_usage: expected a boolean, got 1',
    ],
    [
      { model: '', messages: [{ role: 'user', content: 'x' }] },
      'model: expected a model name, got ""',
    ],
    [null, 'body: expected a JSON object, got null'],
    [
      { model: 'm', messages: [{ role: 'user', content: '\ud800' }] },
      'messages[0].content: expected well-formed Unicode text, got a lone surrogate',
    ],
    [
      { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'a\udc00b' }] }] },
      'messages[0].content[0].text: expected well-formed Unicode text, got a lone surrogate',
    ],
    [
      { model: 'm', messages: [{ role: 'user', content: 'x', name: '\udbff' }] },
      'messages[0].name: expected well-formed Unicode text, got a lone surrogate',
    ],
    [
      { model: 'm', messages: [{ role: 'user', content: 'x' }], stop: ['ok', '\ud800'] },
      'stop[1]: expected well-formed Unicode text, got a lone surrogate',
    ],
    [
      { model: 'm\ud800', messages: [{ role: 'user', content: 'x' }] },
      'model: expected well-formed Unicode text, got a lone surrogate',
    ],
    [
      { model: 'm', messages: [{ role: 'user', content: 'x' }], top_k: -2 },
      'top_k: expected an integer ≥ -1, got -2',
    ],
    [
      { model: 'm', messages: [{ role: 'user', content: 'x' }], min_p: 1.5 },
      'min_p: expected a number in [0, 1], got 1.5',
    ],
    [
      { model: 'm', messages: [{ role: 'user', content: 'x' }], repetition_penalty: 0 },
      'repetition_penalty: expected a number > 0, got 0',
    ],
    // vLLM's and SGLang's bound: a mass of 0 keeps no token.
    [
      { model: 'm', messages: [{ role: 'user', content: 'x' }], top_p: 0 },
      'top_p: expected a number in (0, 1], got 0',
    ],
    [
      { model: 'm', messages: [{ role: 'user', content: 'x' }], min_tokens: -1 },
      'min_tokens: expected an integer ≥ 0, got -1',
    ],
    [
      { model: 'm', messages: [{ role: 'user', content: 'x' }], min_tokens: 9, max_tokens: 8 },
      'min_tokens: expected at most max_tokens (8), got 9',
    ],
  ];
  for (const [body, message] of cases) {
    assert.equal(rejection(() => parseChatCompletionRequest(body)).message, message);
  }
});

test('a number too large for a double (1e309) is a 400 naming the field, not Infinity', () => {
  const base = '"model":"m","messages":[{"role":"user","content":"x"}]';
  const cases: [string, string][] = [
    ['max_tokens', 'an integer in [1, 1048576]'],
    ['temperature', 'a number ≥ 0'],
    ['seed', 'an integer'],
    ['max_completion_tokens', 'an integer in [1, 1048576]'],
  ];
  for (const [field, expected] of cases) {
    for (const literal of ['1e309', '-1e309']) {
      const body = parseJsonText(`{${base},"${field}":${literal}}`);
      const err = rejection(() => parseChatCompletionRequest(body));
      const got = literal.startsWith('-') ? '-Infinity' : 'Infinity';
      assert.equal(err.message, `${field}: expected ${expected}, got ${got}`);
      assert.equal(err.param, field);
    }
  }
});

test('stream_options is only allowed when stream is true, as OpenAI and vLLM answer', () => {
  const base = { model: 'm', messages: [{ role: 'user', content: 'x' }] };
  for (const stream of [undefined, null, false]) {
    const err = rejection(() =>
      parseChatCompletionRequest({ ...base, stream, stream_options: { include_usage: true } }),
    );
    assert.equal(err.message, 'stream_options: only allowed when stream is true');
    assert.equal(err.param, 'stream_options');
    assert.throws(() =>
      parseCompletionRequest({ model: 'm', prompt: 'x', stream, stream_options: {} }),
    );
  }
  assert.ok(parseChatCompletionRequest({ ...base, stream_options: null }));
  assert.ok(parseChatCompletionRequest({ ...base, stream: true, stream_options: {} }));
});

test('field paths read like code', () => {
  assert.equal(fieldPath(['messages', 0, 'content', 2, 'text']), 'messages[0].content[2].text');
  assert.equal(fieldPath([]), 'body');
});

test('body text that is not JSON is a 400 that says so', () => {
  assert.deepEqual(parseJsonText('{"a":1}'), { a: 1 });
  const err = rejection(() => parseJsonText('{"a":'));
  assert.equal(err.status, 400);
  assert.match(err.message, /^request body: expected valid JSON, got "\{\\"a\\":" \(/);
  assert.equal(
    rejection(() => parseJsonText('  ')).message,
    'request body: expected a JSON object, got nothing',
  );
});

test('a prompt of a million elements is read in one pass: the one bad element is named', () => {
  const ids: unknown[] = Array.from({ length: 1_000_000 }, (_, i) => i % 1000);
  ids.push('x');
  const err = rejection(() => parseCompletionRequest({ model: 'm', prompt: ids }));
  assert.equal(err.param, 'prompt[1000000]');
  assert.match(err.message, /^prompt\[1000000\]: expected a token id .*, got "x"$/);
  const texts: unknown[] = Array.from({ length: 1_000_000 }, () => 'a');
  texts[999_999] = 7;
  assert.equal(
    rejection(() => parseCompletionRequest({ model: 'm', prompt: texts })).param,
    'prompt[999999]',
  );
});

test("vLLM's decoding and chat-template extras parse as vLLM takes them, on both endpoints", () => {
  const extras = {
    stop_token_ids: [128001, 128009],
    include_stop_str_in_output: true,
    skip_special_tokens: false,
    spaces_between_special_tokens: false,
    allowed_token_ids: [1, 2, 3],
    bad_words: ['darn'],
    add_special_tokens: true,
    length_penalty: 1.2,
    use_beam_search: false,
    cache_salt: 'tenant-acme-4f1c',
  };
  const chat = parseChatCompletionRequest({
    model: 'm',
    messages: [
      { role: 'user', content: 'x' },
      { role: 'assistant', content: 'The answer is' },
    ],
    ...extras,
    add_generation_prompt: false,
    continue_final_message: true,
    chat_template_kwargs: { enable_thinking: false, tools_hint: ['a', { b: 1 }] },
  });
  assert.deepEqual(chat.stop_token_ids, [128001, 128009]);
  assert.equal(chat.cache_salt, 'tenant-acme-4f1c');
  assert.deepEqual(chat.chat_template_kwargs, {
    enable_thinking: false,
    tools_hint: ['a', { b: 1 }],
  });
  const text = parseCompletionRequest({ model: 'm', prompt: 'x', ...extras });
  assert.deepEqual(text.allowed_token_ids, [1, 2, 3]);
  // The chat template's knobs are chat's alone, as in vLLM.
  assert.equal(
    rejection(() => parseCompletionRequest({ model: 'm', prompt: 'x', chat_template_kwargs: {} }))
      .message,
    'chat_template_kwargs: unknown field',
  );
});

test("vLLM's extras: a bad value names the field, with vLLM's rules", () => {
  const chat = (extra: object) => () =>
    parseChatCompletionRequest({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      ...extra,
    });
  const cases: [object, string][] = [
    [
      { stop_token_ids: [5, -1] },
      `stop_token_ids[1]: expected a token id (an integer in [0, ${MAX_TOKEN_ID}]), got -1`,
    ],
    [{ stop_token_ids: 'eos' }, 'stop_token_ids: expected an array of token ids, got "eos"'],
    [
      { allowed_token_ids: [] },
      'allowed_token_ids: expected a non-empty array of token ids, got []',
    ],
    [{ bad_words: ['ok', 3] }, 'bad_words[1]: expected a string, got 3'],
    [{ skip_special_tokens: 'no' }, 'skip_special_tokens: expected a boolean, got "no"'],
    [{ cache_salt: '' }, 'cache_salt: expected a non-empty string, got ""'],
    [{ cache_salt: 7 }, 'cache_salt: expected a non-empty string, got 7'],
    [{ length_penalty: 'long' }, 'length_penalty: expected a number, got "long"'],
    [
      { use_beam_search: true },
      'use_beam_search: not supported by this server (expected false or absent), got true',
    ],
    [{ chat_template_kwargs: ['x'] }, 'chat_template_kwargs: expected an object, got ["x"]'],
    [
      { add_generation_prompt: true, continue_final_message: true },
      'continue_final_message: not true together with add_generation_prompt: true',
    ],
  ];
  for (const [extra, message] of cases) assert.equal(rejection(chat(extra)).message, message);
});

test('response_format: text, any JSON object, or JSON under a schema, on both endpoints', () => {
  const formats = [
    { type: 'text' },
    { type: 'json_object' },
    {
      type: 'json_schema',
      json_schema: {
        name: 'weather',
        description: 'a forecast',
        schema: { type: 'object', properties: { c: { type: 'number' } } },
        strict: true,
      },
    },
  ];
  for (const response_format of formats) {
    const chat = parseChatCompletionRequest({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      response_format,
    });
    assert.deepEqual(chat.response_format, response_format);
    const text = parseCompletionRequest({ model: 'm', prompt: 'x', response_format });
    assert.deepEqual(text.response_format, response_format);
  }
  const cases: [unknown, string][] = [
    [
      { type: 'xml' },
      'response_format.type: expected one of text, json_object, json_schema, got "xml"',
    ],
    [
      { type: 'json_schema' },
      'response_format.json_schema: expected an object ({"name": …, "schema": {…}}) when type is json_schema, got nothing',
    ],
    [
      { type: 'json_object', json_schema: { name: 'w' } },
      'response_format.json_schema: expected absent unless type is json_schema, got {"name":"w"}',
    ],
    [
      { type: 'json_schema', json_schema: { schema: {} } },
      'response_format.json_schema.name: expected a non-empty string, got nothing',
    ],
    [
      { type: 'json_schema', json_schema: { name: 'w', schema: [] } },
      'response_format.json_schema.schema: expected a JSON schema (an object), got []',
    ],
    [{ type: 'json_object', extra: 1 }, 'response_format.extra: unknown field'],
    ['json', 'response_format: expected an object ({"type": "json_object"}, …), got "json"'],
  ];
  for (const [response_format, message] of cases) {
    const err = rejection(() =>
      parseChatCompletionRequest({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
        response_format,
      }),
    );
    assert.equal(err.message, message);
  }
});

test('unconstrainedOnly: a server whose replies follow no format refuses any but text', () => {
  unconstrainedOnly({}, 'this server');
  unconstrainedOnly({ response_format: null }, 'this server');
  unconstrainedOnly({ response_format: { type: 'text' } }, 'this server');
  const err = rejection(() =>
    unconstrainedOnly({ response_format: { type: 'json_object' } }, 'the simulated engine'),
  );
  assert.equal(
    err.message,
    'response_format: not supported by the simulated engine (expected {"type":"text"} or absent), got {"type":"json_object"}',
  );
  assert.equal(err.param, 'response_format');
});
