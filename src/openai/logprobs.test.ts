// Log probabilities as vLLM takes them on each endpoint — chat's `logprobs` and `top_logprobs`,
// a completion's count — with its rules; refused by name where replies are filler; a reply's
// gathered from its tokens' in order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseChatCompletionRequest } from './chat-request.ts';
import { parseCompletionRequest } from './completion-request.ts';
import { rejection } from './openai-test-kit.ts';
import { fillerAnswerable } from './request-fields.ts';
import { Logprobs, chatChunk, textChunk } from './chunks.ts';
import { chatCompletion, textCompletion, usage } from './responses.ts';

const CHAT = { model: 'm', messages: [{ role: 'user', content: 'x' }] };
const TEXT = { model: 'm', prompt: 'x' };

test('logprobs parse as vLLM takes them: a flag and a count for chat, a count for a completion', () => {
  for (const fields of [
    { logprobs: true },
    { logprobs: true, top_logprobs: 5 },
    { logprobs: true, top_logprobs: -1 },
    { logprobs: false, top_logprobs: 0 },
  ]) {
    assert.deepEqual(parseChatCompletionRequest({ ...CHAT, ...fields }), { ...CHAT, ...fields });
  }
  for (const logprobs of [0, 3, -1, false, null]) {
    assert.deepEqual(parseCompletionRequest({ ...TEXT, logprobs }), { ...TEXT, logprobs });
  }
});

test('a bad logprobs field is a 400 naming it, with vLLM’s rules', () => {
  const cases: [() => unknown, string, string][] = [
    [
      () => parseChatCompletionRequest({ ...CHAT, top_logprobs: 2 }),
      'top_logprobs: only allowed when logprobs is true',
      'top_logprobs',
    ],
    [
      () => parseChatCompletionRequest({ ...CHAT, logprobs: true, top_logprobs: -2 }),
      'top_logprobs: expected an integer ≥ -1, got -2',
      'top_logprobs',
    ],
    [
      () => parseChatCompletionRequest({ ...CHAT, logprobs: 5 }),
      'logprobs: expected a boolean, got 5',
      'logprobs',
    ],
    [
      () => parseCompletionRequest({ ...TEXT, logprobs: true }),
      'logprobs: expected an integer ≥ -1, or false, got true',
      'logprobs',
    ],
    [
      () => parseCompletionRequest({ ...TEXT, logprobs: 2.5 }),
      'logprobs: expected an integer ≥ -1, got 2.5',
      'logprobs',
    ],
    [
      () => parseCompletionRequest({ ...TEXT, top_logprobs: 2 }),
      'top_logprobs: not supported by this server (expected 0 or absent), got 2',
      'top_logprobs',
    ],
  ];
  for (const [parse, message, param] of cases) {
    const err = rejection(parse);
    assert.equal(err.message, message);
    assert.equal(err.param, param);
  }
});

test('a server whose replies are filler refuses log probabilities by name, and takes none asked', () => {
  const chat = (logprobs: boolean) => parseChatCompletionRequest({ ...CHAT, logprobs });
  const text = (logprobs: number | false) => parseCompletionRequest({ ...TEXT, logprobs });
  fillerAnswerable(chat(false), 'a filler');
  fillerAnswerable(text(false), 'a filler');
  const why = 'not supported by a filler, whose filler has no token probabilities';
  assert.equal(
    rejection(() => fillerAnswerable(chat(true), 'a filler')).message,
    `logprobs: ${why} (expected false or absent), got true`,
  );
  assert.equal(
    rejection(() => fillerAnswerable(text(0), 'a filler')).message,
    `logprobs: ${why} (expected false or absent), got 0`,
  );
});

test("a reply's log probabilities are its tokens', joined in order; none asked: null", () => {
  const entry = (token: string, logprob: number) => ({
    token,
    logprob,
    bytes: [],
    top_logprobs: [],
  });
  const chat = new Logprobs();
  assert.equal(chat.whole(), null);
  chat.add({ content: [entry('Hel', -0.1)] });
  chat.add({ content: [entry('lo', -0.2), entry('!', -1.5)] });
  const whole = chat.whole();
  assert.deepEqual(whole, { content: [entry('Hel', -0.1), entry('lo', -0.2), entry('!', -1.5)] });
  const head = { id: 'c', created: 1, model: 'm' };
  const answer = chatCompletion(head, 'Hello!', 'stop', usage(3, 3), { logprobs: whole });
  assert.deepEqual(answer.choices[0].logprobs, whole);
  assert.equal(chatCompletion(head, 'Hello!', 'stop', usage(3, 3)).choices[0].logprobs, null);

  // A completion's four lists, each joined.
  const text = new Logprobs();
  text.add({ tokens: ['a'], token_logprobs: [-1], top_logprobs: [{ a: -1 }], text_offset: [0] });
  text.add({ tokens: ['b'], token_logprobs: [-2], top_logprobs: [{ b: -2 }], text_offset: [1] });
  const scored = text.whole();
  assert.deepEqual(scored, {
    tokens: ['a', 'b'],
    token_logprobs: [-1, -2],
    top_logprobs: [{ a: -1 }, { b: -2 }],
    text_offset: [0, 1],
  });
  assert.deepEqual(
    textCompletion(head, 'ab', 'length', usage(1, 2), scored).choices[0].logprobs,
    scored,
  );

  // A rebuilt chunk carries its token's; others null, as before.
  const chunkHead = { ...head, includeUsage: false };
  assert.deepEqual(
    chatChunk(chunkHead, { content: 'a' }, null, { content: [entry('a', -1)] }).choices[0].logprobs,
    {
      content: [entry('a', -1)],
    },
  );
  assert.equal(textChunk(chunkHead, 'a', null).choices[0].logprobs, null);
});
