// A gateway plans a text prompt as its backends count such prompts, learned from their usage:
// behind a vLLM whose tokenizer makes half a token of each the gateway estimates, and whose chat
// template adds 30, a prompt is planned at the estimate until 20 have been counted, then at
// what the backend counts. Prompts of another script keep their own line; a policy may turn
// the scaling off.
import assert from 'node:assert/strict';
import test from 'node:test';
import { estimateChatTokens } from '../../src/openai/prompt-tokens.ts';
import type { ChatMessage } from '../../src/openai/chat-request.ts';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileLearnedStore } from '../../src/gateway/learned-state-store.ts';
import type OpenAI from 'openai';
import { parseImageTokens } from '../../src/openai/image-size.ts';
import { fakeVllm } from './fake-vllm.ts';
import {
  MODEL,
  decisionRecord,
  gateway,
  metricValue,
  onTeardown,
  policyWith,
} from './gateway-kit.ts';

const ADMIN = 'prompt-scale-admin';

/** The backend's count: half a token of each estimated, and 30 of template. */
const halfAndTemplate = (body: Record<string, unknown>) =>
  Math.round(0.5 * estimateChatTokens({ messages: body.messages as ChatMessage[] })) + 30;

type Front = Awaited<ReturnType<typeof gateway>>;

/** Asks `front` a chat of `content`: the prompt tokens admission planned, and the backend's. */
async function ask(
  front: Front,
  content: OpenAI.ChatCompletionUserMessageParam['content'],
): Promise<{ planned: number; counted: number }> {
  const res = await front.client.chat.completions
    .create({ model: MODEL, max_tokens: 2, messages: [{ role: 'user', content }] })
    .withResponse();
  const id = res.response.headers.get('x-goodput-request-id') ?? '';
  const record = await decisionRecord<{ demand: { input_tokens: number } }>(front.url, id, ADMIN);
  return { planned: record.demand.input_tokens, counted: res.data.usage?.prompt_tokens ?? 0 };
}

const english = (i: number) => 'the quick brown fox jumps over the lazy dog '.repeat(2 + 7 * i);

test('a prompt is planned as the backend counts such prompts once 20 have been counted', async () => {
  const front = await gateway(
    [await fakeVllm(undefined, false, 'stop', halfAndTemplate)],
    'goodput',
    {
      adminToken: ADMIN,
    },
  );
  const first = await ask(front, english(0));
  const estimate = estimateChatTokens({ messages: [{ role: 'user', content: english(0) }] });
  assert.equal(first.planned, estimate, 'planned at the estimate while nothing is learned');
  for (let i = 1; i < 20; i++) await ask(front, english(i));
  const slope = await metricValue(front.url, 'goodput_prompt_scale_slope', { script: 'latin' });
  const intercept = await metricValue(front.url, 'goodput_prompt_scale_intercept_tokens', {
    script: 'latin',
  });
  // Half of an odd estimate rounds up: a thousandth over a half, at most.
  assert.ok(
    Math.abs(slope - 0.5) <= 0.002 && Math.abs(intercept - 30) <= 1,
    `${slope}, ${intercept}`,
  );
  for (const i of [3, 25, 60]) {
    const later = await ask(front, english(i));
    const off = Math.abs(later.planned - later.counted);
    assert.ok(off <= 1 + 0.005 * later.counted, `${later.planned} vs ${later.counted}`);
  }
  // A Chinese prompt is planned by its own script's line, which has counted none.
  const chinese = '清晨的阳光洒在湖面上，'.repeat(30);
  const other = await ask(front, chinese);
  const its = estimateChatTokens({ messages: [{ role: 'user', content: chinese }] });
  assert.equal(other.planned, its);
  assert.equal(await metricValue(front.url, 'goodput_prompt_scale_slope', { script: 'other' }), 1);
});

test('a prompt with images has its text planned by the line; images by URL are learned from what is left', async () => {
  // The backend counts the text as above, and 900 tokens for each image by URL.
  const images = (body: Record<string, unknown>) =>
    (body.messages as { content: unknown }[])
      .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((p: { type?: string }) => p.type === 'image_url').length;
  const counts = (body: Record<string, unknown>) => halfAndTemplate(body) + 900 * images(body);
  const front = await gateway([await fakeVllm(undefined, false, 'stop', counts)], 'goodput', {
    adminToken: ADMIN,
    imageTokens: parseImageTokens('qwen2-vl'),
  });
  const picture = (i: number, words: number) => [
    { type: 'text' as const, text: 'describe this shot '.repeat(words) },
    { type: 'image_url' as const, image_url: { url: `https://example.com/shots/${i}.png` } },
  ];
  for (let i = 0; i < 20; i++) await ask(front, english(i));
  for (let i = 0; i < 20; i++) await ask(front, picture(i, 5 + 3 * i));
  assert.equal(await metricValue(front.url, 'goodput_url_image_planned_tokens'), 900);
  const long = await ask(front, picture(20, 400));
  assert.ok(
    Math.abs(long.planned - long.counted) <= 2,
    `${long.planned} vs ${long.counted}: the text scaled, the image as learned`,
  );
});

test('a restarted gateway plans prompts by the line it had learned (--learned-state)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'goodput-prompt-scale-'));
  onTeardown(async () => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'state.json');
  const learnedState = () => ({
    store: fileLearnedStore(file, '--learned-state'),
    intervalMs: 60_000,
  });
  const backend = await fakeVllm(undefined, false, 'stop', halfAndTemplate);
  const first = await gateway([backend], 'goodput', {
    adminToken: ADMIN,
    learnedState: learnedState(),
  });
  for (let i = 0; i < 20; i++) await ask(first, english(i));
  await first.close();
  const saved = JSON.parse(readFileSync(file, 'utf8')) as {
    prompt_scale: { latin: { pairs: number } };
  };
  assert.equal(saved.prompt_scale.latin.pairs, 20);
  const restarted = await gateway([backend], 'goodput', {
    adminToken: ADMIN,
    learnedState: learnedState(),
  });
  const later = await ask(restarted, english(40));
  assert.ok(
    Math.abs(later.planned - later.counted) <= 1 + 0.005 * later.counted,
    `${later.planned} vs ${later.counted}: planned by the line, not at the estimate`,
  );
});

test('estimate.scale_prompts: false plans every prompt at the estimate, whatever is counted', async () => {
  const policy = policyWith({ estimate: { scale_prompts: false } });
  const front = await gateway([await fakeVllm(undefined, false, 'stop', halfAndTemplate)], policy, {
    adminToken: ADMIN,
  });
  for (let i = 0; i < 20; i++) await ask(front, english(i));
  const later = await ask(front, english(25));
  const estimate = estimateChatTokens({ messages: [{ role: 'user', content: english(25) }] });
  assert.equal(later.planned, estimate);
  assert.notEqual(later.counted, estimate);
  const text = await (await fetch(`${front.url}/metrics`)).text();
  assert.doesNotMatch(text, /^# HELP goodput_prompt_scale_slope /m);
});
