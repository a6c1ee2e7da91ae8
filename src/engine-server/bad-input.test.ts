// Every bad input, in-process: the right status and an OpenAI error body naming the field and
// the value. The server must answer each one and keep serving.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CHAT, MODEL, TEXT, expectError, post, testServer, user } from './app-test-kit.ts';

const main = testServer();

const badInputs: [string, string, unknown, number, RegExp, string | null | undefined][] = [
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
    /^messages\[0\]\.role: expected one of system, developer, user, assistant, tool, got "robot"$/,
    'messages[0].role',
  ],
  [
    'content of the wrong type',
    CHAT,
    { model: MODEL, messages: [{ role: 'user', content: 42 }] },
    400,
    /^messages\[0\]\.content: expected a string or a non-empty array of content parts, got 42$/,
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
    /^'max_completion_tokens' is too large: 9000\. This model's maximum context length is 8192 tokens and your request has 8 input tokens \(9000 > 8192 - 8\)\.$/,
    'max_completion_tokens',
  ],
  [
    'n of 0',
    CHAT,
    { model: MODEL, messages: user('hi'), n: 0 },
    400,
    /^n: expected an integer from 1 to 128, got 0$/,
    'n',
  ],
  [
    'n above 128',
    TEXT,
    { model: MODEL, prompt: 'hi', n: 129 },
    400,
    /^n: expected an integer from 1 to 128, got 129$/,
    'n',
  ],
  [
    'n not a whole number',
    CHAT,
    { model: MODEL, messages: user('hi'), n: 1.5 },
    400,
    /^n: expected an integer from 1 to 128, got 1.5$/,
    'n',
  ],
  [
    'temperature out of range (vLLM takes any ≥ 0)',
    TEXT,
    { model: MODEL, prompt: 'hi', temperature: -0.5 },
    400,
    /^temperature: expected a number ≥ 0, got -0.5$/,
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
    /^prompt: expected a string, or a non-empty array of strings, of token ids or of token-id arrays, got nothing$/,
    'prompt',
  ],
  [
    'a negative token id',
    TEXT,
    { model: MODEL, prompt: [1, -5] },
    400,
    /^prompt\[1\]: expected a token id \(an integer in \[0, 1679615\]\), got -5$/,
    'prompt[1]',
  ],
  [
    'an unknown field',
    CHAT,
    { model: MODEL, messages: user('hi'), temprature: 0.5 },
    400,
    /^temprature: unknown field$/,
    'temprature',
  ],
  [
    'an unknown message field',
    CHAT,
    { model: MODEL, messages: [{ role: 'user', content: 'hi', contents: 'x' }] },
    400,
    /^messages\[0\]\.contents: unknown field$/,
    'messages[0].contents',
  ],
  [
    'a __proto__ key',
    TEXT,
    '{"model":"llama-3-8b","prompt":"hi","__proto__":{"max_tokens":1}}',
    400,
    /^__proto__: unknown field$/,
    '__proto__',
  ],
  [
    'an unsupported field with a value that asks for something',
    CHAT,
    { model: MODEL, messages: user('hi'), echo: true, best_of: 3 },
    400,
    /^echo: not supported by this server \(expected false or absent\), got true; best_of: not supported/,
    'echo',
  ],
  [
    'stream_options without stream',
    TEXT,
    { model: MODEL, prompt: 'hi', stream_options: { include_usage: true } },
    400,
    /^stream_options: only allowed when stream is true$/,
    'stream_options',
  ],
  [
    'a lone surrogate',
    CHAT,
    '{"model":"llama-3-8b","messages":[{"role":"user","content":"a\\ud800"}]}',
    400,
    /^messages\[0\]\.content: expected well-formed Unicode text, got a lone surrogate$/,
    'messages[0].content',
  ],
  [
    'a number past a double (1e309)',
    CHAT,
    '{"model":"llama-3-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":1e309}',
    400,
    /^max_tokens: expected an integer in \[1, 1048576\], got Infinity$/,
    'max_tokens',
  ],
  [
    'nesting 5,000 levels deep in an unknown field',
    CHAT,
    `{"model":"llama-3-8b","messages":[{"role":"user","content":"x"}],"max_tokens":3,"x":${'['.repeat(5000)}${']'.repeat(5000)}}`,
    400,
    /^request body: nesting deeper than 32 levels at x\[0\]\[0\]/,
    undefined,
  ],
  [
    'a duplicate key',
    CHAT,
    '{"model":"llama-3-8b","messages":[{"role":"user","role":"system","content":"x"}]}',
    400,
    /^messages\[0\]: duplicate key "role"$/,
    'messages[0].role',
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
    /^This model's maximum context length is 8192 tokens\. However, your request has 9000 input tokens \(estimated\)\. Please reduce the length of the input \(prompt\)\.$/,
    'prompt',
  ],
  [
    'token ids longer than the context (counted, not estimated)',
    TEXT,
    { model: MODEL, prompt: Array.from({ length: 9000 }, () => 1) },
    400,
    /^This model's maximum context length is 8192 tokens\. However, your request has 9000 input tokens\. Please reduce the length of the input \(prompt\)\.$/,
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
    /top_p: expected a number in \(0, 1\], got 2; messages\[0\]\.role: expected one of/,
  );
  assert.equal(err.type, 'invalid_request_error');
});

test('a body that is not UTF-8 is a 400 naming the offset, not decoded with replacements', async () => {
  const bytes = new TextEncoder().encode(`{"model":"${MODEL}","prompt":"hi \u00ff"}`);
  bytes[bytes.length - 4] = 0xff; // the lead byte of ÿ, now a byte UTF-8 never uses
  await expectError(
    await post(main, TEXT, '', { body: bytes }),
    400,
    new RegExp(
      `^request body: expected UTF-8 text, got invalid bytes at offset ${bytes.length - 4}$`,
    ),
    null,
  );
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
