// Every bad input, in-process: the right status and an OpenAI error body naming the field and
// the value. The server must answer each one and keep serving.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CHAT, MODEL, TEXT, expectError, post, testServer, user } from './app-test-kit.ts';

const main = testServer();

const badInputs: [string, string, unknown, number, RegExp, string | null][] = [
  ['malformed JSON', CHAT, '{"model": ', 400, /^request body: expected valid JSON, got/, null],
  ['empty body', CHAT, '', 400, /^request body: expected a JSON object, got nothing$/, null],
  ['a JSON array', CHAT, '[1,2]', 400, /^body: expected a JSON object, got \[1,2\]$/, null],
  [
    'missing messages',
    CHAT,
    { model: MODEL },
    400,
    /^messages: expected a non-empty array of messages, got nothing$/,
    'messages',
  ],
  [
    'empty messages',
    CHAT,
    { model: MODEL, messages: [] },
    400,
    /^messages: expected a non-empty array of messages, got \[\]$/,
    'messages',
  ],
  [
    'unknown role',
    CHAT,
    { model: MODEL, messages: [{ role: 'robot', content: 'hi' }] },
    400,
    /^messages\[0\]\.role: expected one of system, user, assistant, tool, got "robot"$/,
    'messages[0].role',
  ],
  [
    'content of the wrong type',
    CHAT,
    { model: MODEL, messages: [{ role: 'user', content: 42 }] },
    400,
    /^messages\[0\]\.content: expected a string or an array of text parts, got 42$/,
    'messages[0].content',
  ],
  [
    'model of the wrong type',
    CHAT,
    { model: 7, messages: user('hi') },
    400,
    /^model: expected a model name, got 7$/,
    'model',
  ],
  [
    'negative max_tokens',
    CHAT,
    { model: MODEL, messages: user('hi'), max_tokens: -1 },
    400,
    /^max_tokens: expected an integer in \[1, 1048576\], got -1$/,
    'max_tokens',
  ],
  [
    'fractional max_tokens',
    TEXT,
    { model: MODEL, prompt: 'hi', max_tokens: 2.5 },
    400,
    /^max_tokens: expected an integer in \[1, 1048576\], got 2.5$/,
    'max_tokens',
  ],
  [
    'huge max_tokens',
    CHAT,
    { model: MODEL, messages: user('hi'), max_tokens: 1e12 },
    400,
    /^max_tokens: expected an integer in \[1, 1048576\], got 1000000000000$/,
    'max_tokens',
  ],
  [
    'max_tokens past the context',
    CHAT,
    { model: MODEL, messages: user('hi'), max_completion_tokens: 9000 },
    400,
    /^max_completion_tokens: expected at most 8184 \(the model's context of 8192 tokens less 8 prompt tokens\), got 9000$/,
    'max_completion_tokens',
  ],
  [
    'n above 1',
    CHAT,
    { model: MODEL, messages: user('hi'), n: 2 },
    400,
    /^n: expected 1 \(only one choice per request is supported\), got 2$/,
    'n',
  ],
  [
    'temperature out of range',
    TEXT,
    { model: MODEL, prompt: 'hi', temperature: 3 },
    400,
    /^temperature: expected a number in \[0, 2\], got 3$/,
    'temperature',
  ],
  [
    'stream not a boolean',
    TEXT,
    { model: MODEL, prompt: 'hi', stream: 'yes' },
    400,
    /^stream: expected a boolean, got "yes"$/,
    'stream',
  ],
  [
    'missing prompt',
    TEXT,
    { model: MODEL },
    400,
    /^prompt: expected a string or a non-empty array of strings, got nothing$/,
    'prompt',
  ],
  [
    'batched prompts',
    TEXT,
    { model: MODEL, prompt: ['a', 'b'] },
    400,
    /^prompt: expected one prompt .*got 2 prompts$/,
    'prompt',
  ],
  [
    'unknown model',
    CHAT,
    { model: 'gpt-4o', messages: user('hi') },
    404,
    /^model: expected one of llama-3-8b, got "gpt-4o"/,
    'model',
  ],
  [
    'a prompt longer than the context',
    TEXT,
    { model: MODEL, prompt: 'x'.repeat(4 * 9000) },
    400,
    /^prompt: expected a prompt under the model's context of 8192 tokens, got 9000 tokens \(estimated\)$/,
    'prompt',
  ],
];

for (const [name, path, body, status, message, param] of badInputs) {
  test(`bad input: ${name} → ${status}`, async () => {
    await expectError(await post(main, path, body), status, message, param);
  });
}

test('every problem of a request is named, the first one as param', async () => {
  const err = await expectError(
    await post(main, CHAT, { model: MODEL, messages: [{ role: 'robot' }], top_p: 2 }),
    400,
    /top_p: expected a number in \[0, 1\], got 2; messages\[0\]\.role: expected one of/,
  );
  assert.equal(err.type, 'invalid_request_error');
});

test('an oversized body is answered 413 without being parsed', async () => {
  const small = testServer({ maxBodyBytes: 1024 });
  const body = JSON.stringify({ model: MODEL, prompt: 'y'.repeat(2000) });
  await expectError(
    await post(small, TEXT, body),
    413,
    /^request body: expected at most 1024 bytes/,
  );
});

test('unknown routes are 404 in the same error shape', async () => {
  await expectError(
    await main.app.request('/v1/embeddings'),
    404,
    /^GET \/v1\/embeddings: no such route$/,
  );
});

test('a huge value in an error message is cut short', async () => {
  const err = await expectError(
    await post(main, CHAT, { model: 'z'.repeat(10_000), messages: user('hi') }),
    404,
    /…/,
  );
  assert.ok(String(err.message).length < 300);
});

test('the server keeps serving after every bad input', async () => {
  const res = await post(main, TEXT, { model: MODEL, prompt: 'hi', max_tokens: 2 });
  assert.equal(res.status, 200);
});
