import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isOpenAiError, type OpenAiError } from './errors.ts';
import { messageText, parseChatCompletionRequest } from './chat-request.ts';
import { parseCompletionRequest, promptList } from './completion-request.ts';
import { includeUsage, outputLimit } from './request-fields.ts';
import { fieldPath, parseJsonText } from './validation.ts';

function rejection(fn: () => unknown): OpenAiError {
  try {
    fn();
  } catch (e) {
    assert.ok(isOpenAiError(e), String(e));
    return e;
  }
  assert.fail('expected a rejection');
}

test('a full chat request parses; nulls count as absent and unknown fields are dropped', () => {
  const req = parseChatCompletionRequest({
    model: 'm',
    messages: [
      { role: 'system', content: 'be brief' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
      { role: 'assistant', content: null },
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
    logit_bias: { 1: 2 },
  });
  assert.equal(messageText(req.messages[1]), 'a\nb');
  assert.equal(messageText(req.messages[2]), '');
  assert.deepEqual(outputLimit(req), { tokens: 7, field: 'max_completion_tokens' });
  assert.equal(includeUsage(req), true);
  assert.equal('logit_bias' in req, false);
});

test('a completion prompt is a string or a list of strings', () => {
  assert.deepEqual(promptList(parseCompletionRequest({ model: 'm', prompt: 'x' })), ['x']);
  assert.deepEqual(promptList(parseCompletionRequest({ model: 'm', prompt: ['x', 'y'] })), [
    'x',
    'y',
  ]);
  const err = rejection(() => parseCompletionRequest({ model: 'm', prompt: [1, 2] }));
  assert.equal(err.message, 'prompt: expected a string or a non-empty array of strings, got [1,2]');
  assert.equal(err.status, 400);
  assert.equal(err.param, 'prompt');
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
      'messages[1].role: expected one of system, user, assistant, tool, got "robot"',
    ],
    [{ model: 'm', messages: ['hi'] }, 'messages[0]: expected a message object, got "hi"'],
    [
      { model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url' }] }] },
      'messages[0].content: expected a string or an array of text parts, got [{"type":"image_url"}]',
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
  ];
  for (const [body, message] of cases) {
    assert.equal(rejection(() => parseChatCompletionRequest(body)).message, message);
  }
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
