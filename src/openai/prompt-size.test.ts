// A prompt as a server sizes it, with vLLM's truncate_prompt_tokens: its last k tokens kept (-1:
// the context's worth), text cut that way not hashed, token ids cut hashed as kept; a k past the
// context, or 0, a 400 naming the field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseChatCompletionRequest } from './chat-request.ts';
import { parseCompletionRequest } from './completion-request.ts';
import { rejection } from './openai-test-kit.ts';
import { chatBlockHashes, completionBlockHashes } from './prefix-hashes.ts';
import { chatPromptSize, completionPromptSize } from './prompt-size.ts';
import { estimateChatTokens, leastChatTokens } from './prompt-tokens.ts';

const CONTEXT = 8192;
const long = 'The incident report follows, line by line. '.repeat(400);
const chat = (truncate?: number) =>
  parseChatCompletionRequest({
    model: 'm',
    messages: [{ role: 'user', content: long }],
    ...(truncate === undefined ? {} : { truncate_prompt_tokens: truncate }),
  });

test('untruncated, a prompt is its estimate, bound and hashes', () => {
  const req = chat();
  const size = chatPromptSize(req, CONTEXT);
  assert.equal(size.tokens, estimateChatTokens(req));
  assert.equal(size.atLeast, leastChatTokens(req));
  assert.equal(size.cut, false);
  assert.deepEqual(size.hashes(size.tokens, 16), chatBlockHashes(req, size.tokens, 16));
  // A truncation longer than the prompt cuts nothing.
  assert.deepEqual(chatPromptSize(chat(8000), CONTEXT).tokens, size.tokens);
  assert.equal(chatPromptSize(chat(8000), CONTEXT).cut, false);
});

test('a text prompt cut to its last k tokens is k long and unhashed', () => {
  const size = chatPromptSize(chat(1000), CONTEXT);
  assert.ok(estimateChatTokens(chat()) > 1000);
  assert.deepEqual([size.tokens, size.cut, size.hashes(1000, 16).hashes], [1000, true, []]);
  assert.ok((size.atLeast as number) <= 1000);
  assert.equal(chatPromptSize(chat(-1), CONTEXT).tokens, estimateChatTokens(chat()), 'it fits');
  assert.equal(chatPromptSize(chat(-1), 2048).tokens, 2048, '-1: the context holds');
});

test('token ids cut are hashed as kept: the last k ids', () => {
  const ids = Array.from({ length: 3000 }, (_, i) => (i * 7919) % 128_000);
  const req = parseCompletionRequest({ model: 'm', prompt: ids, truncate_prompt_tokens: 512 });
  const size = completionPromptSize(req, CONTEXT);
  assert.deepEqual([size.tokens, size.cut, size.atLeast], [512, true, undefined]);
  assert.deepEqual(size.hashes(512, 16), completionBlockHashes(ids.slice(-512), 512, 16));
  assert.equal(size.hashes(512, 16).hashes.length, 32);
});

test('a truncation past the context, or of 0, is a 400 naming truncate_prompt_tokens', () => {
  const err = rejection(() => chatPromptSize(chat(9000), CONTEXT));
  assert.equal(
    err.message,
    "truncate_prompt_tokens: expected at most the model's context (8192 tokens), or -1, got 9000",
  );
  assert.equal(err.param, 'truncate_prompt_tokens');
  for (const k of [0, -2, 1.5]) {
    const bad = rejection(() => chat(k));
    assert.match(bad.message, /^truncate_prompt_tokens: expected an integer ≥ 1, or -1, got /);
  }
});
