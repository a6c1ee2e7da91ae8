// The Responses API's `truncation: "auto"`, as agent SDKs send it: a conversation continued
// past the model's context loses its oldest turns, cut where a user's turn begins, and goes on
// turn after turn in bounded room, its instructions kept; without it, a turn goes upstream
// whole, past the context. `goodput engine` cuts a whole conversation sent at once alike.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { estimateChatTokens } from '../../src/openai/prompt-tokens.ts';
import type { ChatMessage } from '../../src/openai/chat-request.ts';
import { MODEL, engines, gateway, metricValue } from './gateway-kit.ts';
import { fakeVllm } from './fake-vllm.ts';

const CONTEXT = 8192;
/** A user's turn of some 2,000 tokens, numbered. */
const chapter = (i: number) =>
  `Chapter ${i}. ${'the quick brown fox jumps over the lazy dog '.repeat(180)}`;
const counted = (body: Record<string, unknown>) =>
  estimateChatTokens({ messages: body.messages as ChatMessage[] });

test('truncation auto: a conversation past the context loses its oldest turns and goes on', async () => {
  const vllm = await fakeVllm([{ content: 'Noted.' }], false, 'stop', counted);
  const front = await gateway([vllm]);
  let previous: string | undefined;
  let cut = 0;
  for (let i = 0; i < 6; i++) {
    const r = await front.client.responses.create({
      model: MODEL,
      instructions: 'You are a scribe.',
      input: chapter(i),
      previous_response_id: previous,
      truncation: 'auto',
      max_output_tokens: 16,
    });
    assert.equal(r.truncation, 'auto');
    assert.equal(r.status, 'completed');
    previous = r.id;
    const sent = vllm.bodies.at(-1) as { messages: ChatMessage[] };
    assert.equal(sent.messages[0].role, 'system', 'its instructions kept');
    assert.equal(sent.messages[1].role, 'user', 'cut where a turn begins');
    assert.match(String(sent.messages.at(-1)?.content), new RegExp(`^Chapter ${i}\\.`));
    assert.ok(counted(sent) + 16 <= CONTEXT, `turn ${i}: ${counted(sent)} tokens sent`);
    if (!String(sent.messages[1].content).startsWith('Chapter 0.')) cut++;
  }
  assert.ok(cut >= 2, `${cut} turns cut`);
  assert.equal(await metricValue(front.url, 'goodput_responses_truncated_total'), cut);
  assert.ok((await metricValue(front.url, 'goodput_responses_truncated_items_total')) >= 2 * cut);
  // What it keeps is what was sent: the next turn follows the cut conversation.
  const items = await front.client.responses.inputItems.list(previous ?? '', { limit: 100 });
  assert.ok(items.data.length < 11, `${items.data.length} items kept`);
  // Without truncation, nothing is cut: the turn goes as the whole conversation, past the
  // context (a vLLM refuses it; the gateway's estimate cannot be sure it will).
  await front.client.responses.create({
    model: MODEL,
    input: chapter(9),
    previous_response_id: previous,
    max_output_tokens: 16,
  });
  const whole = vllm.bodies.at(-1) as { messages: ChatMessage[] };
  assert.equal(whole.messages.length, items.data.length + 2);
  assert.ok(counted(whole) + 16 > CONTEXT);
});

test('goodput engine cuts a whole conversation sent at once to its context, and only when asked', async () => {
  const [engine] = await engines(1);
  const client = new OpenAI({ baseURL: `${engine.url}/v1`, apiKey: 'none', maxRetries: 0 });
  const input = Array.from({ length: 5 }, (_, i) => [
    { role: 'user' as const, content: chapter(i) },
    { role: 'assistant' as const, content: 'Noted.' },
  ]).flat();
  input.pop();
  const r = await client.responses.create({
    model: MODEL,
    input,
    truncation: 'auto',
    max_output_tokens: 8,
  });
  assert.equal(r.truncation, 'auto');
  const used = r.usage?.input_tokens ?? 0;
  assert.ok(used > CONTEXT / 2 && used + 8 <= CONTEXT, `${used} prompt tokens`);
  await assert.rejects(
    client.responses.create({ model: MODEL, input, max_output_tokens: 8 }),
    (e: unknown) => e instanceof OpenAI.BadRequestError,
  );
});
