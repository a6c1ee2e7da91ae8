// The words only a request can give its refusal, and the wire answer they make: the class asked
// and those granted, a prompt too long in OpenAI's code with its field as `param`, and the
// charge a tenant's whole window cannot hold.
import assert from 'node:assert/strict';
import test from 'node:test';
import type { ContextOverflow, Rejection } from '../../core/request/decision.ts';
import type { LlmRequest } from '../../core/request/request.ts';
import { beyondWindowWords, wordsFor, type Asked } from './refusal-words.ts';
import { refusalOf } from './refusals.ts';

const req: LlmRequest = {
  id: 'r1',
  arrivalMs: 0,
  inputTokens: 16,
  outputTokens: 1_000,
  maxTokens: 1_000,
  tenant: 'acme',
  sloClass: 'batch',
};
const chat: Asked = { endpoint: 'chat', outputField: 'max_tokens', granted: ['interactive'] };
const tooLong = (context: ContextOverflow): Rejection => ({
  outcome: 'reject',
  status: 400,
  reason: 'context_length',
  context,
});
const window: ContextOverflow = {
  promptTokens: 20,
  outputTokens: 9_000,
  limitTokens: 8_192,
  limit: 'context_window',
};

function bodyOf(d: Rejection, asked: Asked) {
  const answer = refusalOf(d, wordsFor(d, req, asked));
  const { error } = JSON.parse(answer.body) as {
    error: { message: string; param: string | null; code: string };
  };
  return { ...error, reason: answer.headers['x-goodput-reason'] };
}

test('a class not granted names the class asked for and those granted', () => {
  const d: Rejection = { outcome: 'reject', status: 403, reason: 'class_not_granted' };
  assert.deepEqual(bodyOf(d, chat), {
    message: 'this tenant is not granted the class it asked for, "batch" (granted: interactive)',
    type: 'permission_error',
    param: null,
    code: 'class_not_granted',
    reason: 'class_not_granted',
  });
  const none = bodyOf(d, { ...chat, granted: [] });
  assert.match(none.message, /\(granted: none\)$/);
});

test("a prompt too long: OpenAI's code, the endpoint's prompt field, its own output field", () => {
  for (const [asked, param, message] of [
    [
      chat,
      'messages',
      "This model's maximum context length is 8192 tokens: the prompt (20 tokens) and max_tokens (9000) exceed it",
    ],
    [
      { endpoint: 'completion', outputField: 'max_tokens' },
      'prompt',
      "This model's maximum context length is 8192 tokens: the prompt (20 tokens) and max_tokens (9000) exceed it",
    ],
    [
      { endpoint: 'responses', outputField: 'max_output_tokens' },
      'input',
      "This model's maximum context length is 8192 tokens: the prompt (20 tokens) and max_output_tokens (9000) exceed it",
    ],
  ] as const) {
    const e = bodyOf(tooLong(window), asked);
    assert.deepEqual(
      [e.code, e.param, e.message, e.reason],
      ['context_length_exceeded', param, message, 'context_length'],
    );
  }
  const kv = bodyOf(tooLong({ ...window, limit: 'kv_cache', promptAtLeast: true }), chat);
  assert.deepEqual([kv.code, kv.param], ['kv_capacity_exceeded', 'messages']);
  assert.equal(
    kv.message,
    "the prompt (at least 20 tokens) and the output reserved for it (9000) exceed a replica's usable KV cache of 8192 tokens",
  );
  // Without the request's words, the chat endpoint's.
  const bare = JSON.parse(refusalOf(tooLong(window)).body) as { error: { param: string } };
  assert.equal(bare.error.param, 'messages');
});

test("a charge over the tenant's whole window names what it is made of and the window", () => {
  const tail = "the tenant's whole window holds 300 (tokens_per_window), so no retry can succeed";
  assert.equal(
    beyondWindowWords(req, 1_016, 300, chat).message,
    `this request needs 1,016 tokens (prompt 16 + max_tokens 1000); ${tail}`,
  );
  const two = { ...req, choices: 2, maxTokens: undefined };
  assert.equal(
    beyondWindowWords(two, 16 + 2 * 412.5, 300, chat).message,
    `this request needs 841 tokens (prompt 16 + 2 × a predicted output of 413); ${tail}`,
  );
});
