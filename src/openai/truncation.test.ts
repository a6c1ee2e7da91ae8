import assert from 'node:assert/strict';
import test from 'node:test';
import type { ChatCompletionRequest } from './chat-request.ts';
import type { InputItem } from './response-items.ts';
import { parseResponsesRequest } from './responses-request.ts';
import { estimateChatTokens } from './prompt-tokens.ts';
import { REPLY_SHARE, firstKept, truncationStart } from './truncation.ts';

const user = (content: string) => ({ type: 'message', role: 'user', content }) as InputItem;
const reply = (content: string) => ({ type: 'message', role: 'assistant', content }) as InputItem;
const call = { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' } as InputItem;
const output = { type: 'function_call_output', call_id: 'c1', output: 'ok' } as InputItem;

// Turns begin at 0, 2 and 6: a cut never parts a call from its output.
const conversation = [user('a'), reply('b'), user('c'), call, output, reply('d'), user('e')];

test('cuts fall where a user begins a turn: the earliest that fits, found by bisection', () => {
  const tried: number[] = [];
  const fitsFrom = (least: number) => (from: number) => {
    tried.push(from);
    return from >= least;
  };
  assert.equal(firstKept(conversation, fitsFrom(0)), 0);
  assert.equal(firstKept(conversation, fitsFrom(1)), 2, 'not inside the first turn');
  assert.equal(firstKept(conversation, fitsFrom(3)), 6, 'not between a call and its output');
  tried.length = 0;
  assert.equal(
    firstKept(conversation, () => false),
    6,
    'none fits: the last turn, refused',
  );
  assert.ok(tried.length <= 3, `${tried.length} sizings`);
  assert.equal(
    firstKept([user('only')], () => false),
    0,
  );
});

test('truncation auto keeps the newest turns that fit with room for the reply; disabled keeps all', () => {
  const chapter = (i: number) => user(`Chapter ${i}. ${'the quick brown fox '.repeat(400)}`);
  const input = Array.from({ length: 6 }, (_, i) => [chapter(i), reply('Noted.')]).flat();
  input.pop();
  const size = (chat: ChatCompletionRequest) => estimateChatTokens({ messages: chat.messages });
  const asked = (extra: object) =>
    parseResponsesRequest({ model: 'm', input, instructions: 'You are a scribe.', ...extra });
  const context = 8192;
  assert.equal(truncationStart(asked({}), input, context, size), 0);
  const from = truncationStart(
    asked({ truncation: 'auto', max_output_tokens: 64 }),
    input,
    context,
    size,
  );
  assert.ok(from > 0 && from % 2 === 0, `cut at a turn: ${from}`);
  const kept = parseResponsesRequest({ model: 'm', input: input.slice(from) });
  const fits = (items: InputItem[]) =>
    estimateChatTokens({
      messages: [{ role: 'system', content: 'You are a scribe.' }, ...(items as never[])],
    });
  assert.ok(fits(kept.input as InputItem[]) + 64 <= context);
  assert.ok(fits(input.slice(from - 2)) + 64 > context, 'one more turn would not fit');
  // Without max_output_tokens, an eighth of the context is kept for the reply.
  const roomy = truncationStart(asked({ truncation: 'auto' }), input, context, size);
  assert.ok(fits(input.slice(roomy)) + REPLY_SHARE * context <= context);
  assert.ok(roomy >= from);
});
