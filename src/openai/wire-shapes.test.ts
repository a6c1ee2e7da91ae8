import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SSE_DONE, chatChunk, sseData, textChunk, usageChunk } from './chunks.ts';
import {
  OpenAiError,
  errorResponse,
  invalidRequest,
  modelNotFound,
  payloadTooLarge,
  serverError,
} from './errors.ts';
import {
  chatChoice,
  chatCompletion,
  chatCompletionOf,
  modelList,
  textCompletion,
  usage,
} from './responses.ts';
import { servedTier } from './request-fields.ts';

const head = { id: 'chatcmpl-1', created: 1700000000, model: 'm', includeUsage: false };

test('chat chunks: role first, content deltas, an empty delta with the finish reason', () => {
  assert.deepEqual(chatChunk(head, { role: 'assistant', content: '' }, null), {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'm',
    choices: [
      { index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
    ],
  });
  assert.deepEqual(chatChunk(head, {}, 'length').choices[0].finish_reason, 'length');
});

test('with include_usage every chunk carries usage null and a last chunk carries the usage', () => {
  const h = { ...head, includeUsage: true };
  assert.equal(chatChunk(h, { content: 'x' }, null).usage, null);
  assert.equal(textChunk(h, 'x', null).usage, null);
  assert.deepEqual(usageChunk('text_completion', h, usage(3, 4)), {
    id: 'chatcmpl-1',
    object: 'text_completion',
    created: 1700000000,
    model: 'm',
    choices: [],
    usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
  });
});

test('an answer whose request named a tier names the tier served, after its model, in every chunk', () => {
  const tiered = { ...head, includeUsage: true, serviceTier: servedTier('auto') };
  const keys = (o: object) => Object.keys(o).slice(0, 5);
  const first = ['id', 'object', 'created', 'model', 'service_tier'];
  for (const chunk of [
    chatChunk(tiered, { content: 'x' }, null),
    textChunk(tiered, 'x', 'stop'),
    usageChunk('chat.completion.chunk', tiered, usage(1, 2)),
    chatCompletionOf(tiered, [chatChoice(0, 'x', 'stop')], usage(1, 2)),
  ]) {
    assert.deepEqual(keys(chunk), first);
    assert.equal(
      (chunk as { service_tier?: string }).service_tier,
      'default',
      'auto served as default',
    );
  }
  assert.equal(servedTier('flex'), 'flex');
  // A request that named none: no tier, as vLLM answers.
  assert.equal('service_tier' in chatChunk(head, {}, null), false);
  assert.equal('service_tier' in chatCompletionOf(head, [], usage(1, 2)), false);
});

test('SSE framing: one data line per event, then [DONE]', () => {
  assert.equal(sseData({ a: 1 }), 'data: {"a":1}\n\n');
  assert.equal(SSE_DONE, 'data: [DONE]\n\n');
});

test('whole responses carry usage and the finish reason', () => {
  const c = chatCompletion(head, 'hi there', 'stop', usage(5, 2));
  assert.equal(c.object, 'chat.completion');
  assert.deepEqual(c.choices[0].message, { role: 'assistant', content: 'hi there' });
  assert.equal(c.usage.total_tokens, 7);
  const t = textCompletion(head, 'hi', 'length', usage(1, 1));
  assert.equal(t.object, 'text_completion');
  assert.equal(t.choices[0].text, 'hi');
  assert.deepEqual(modelList([{ id: 'm', created: 1, ownedBy: 'o' }]), {
    object: 'list',
    data: [{ id: 'm', object: 'model', created: 1, owned_by: 'o' }],
  });
});

test('errors carry OpenAI statuses and types', async () => {
  const cases: [OpenAiError, number, string, string | null][] = [
    [invalidRequest('x: bad', 'x'), 400, 'invalid_request_error', null],
    [modelNotFound('gpt', ['m']), 404, 'invalid_request_error', 'model_not_found'],
    [payloadTooLarge(10), 413, 'invalid_request_error', 'payload_too_large'],
    [serverError('boom'), 500, 'server_error', 'internal_error'],
    [new OpenAiError(429, 'slow down'), 429, 'rate_limit_error', null],
  ];
  for (const [e, status, type, code] of cases) {
    assert.equal(e.status, status);
    assert.equal(e.type, type);
    assert.equal(e.code, code);
  }
  const res = errorResponse(invalidRequest('x: bad', 'x'));
  assert.equal(res.status, 400);
  assert.equal(res.headers.get('content-type'), 'application/json');
  assert.deepEqual(await res.json(), {
    error: { message: 'x: bad', type: 'invalid_request_error', param: 'x', code: null },
  });
});
