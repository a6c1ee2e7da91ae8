// Several choices of one prompt (`n`) from the engine server, as the `openai` client reads them
// over real HTTP: whole and streamed, each choice its own tokens and finish, usage counting the
// prompt once and every choice's tokens, the prompt computed once, and a client that leaves
// cancelling every choice.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { serveEngine, type ListeningEngineServer } from './serve.ts';

const MODEL = 'llama-3-8b';
let engine: ListeningEngineServer;
let client: OpenAI;

before(async () => {
  engine = await serveEngine({ profile: 'const:step_ms=2', seed: 11, port: 0 });
  client = new OpenAI({ baseURL: `${engine.url}/v1`, apiKey: 'x', maxRetries: 0 });
});

after(() => engine.close());

test('a whole chat of n choices: one reply per index, usage counts the prompt once', async () => {
  const messages = [{ role: 'user' as const, content: 'Propose a name for a cat.' }];
  const r = await client.chat.completions.create({ model: MODEL, messages, n: 3, max_tokens: 40 });
  assert.deepEqual(
    r.choices.map((c) => c.index),
    [0, 1, 2],
  );
  const words = r.choices.map((c) => (c.message.content ?? '').split(' ').length);
  for (const [i, c] of r.choices.entries()) {
    assert.equal(c.message.role, 'assistant');
    assert.equal(c.finish_reason, words[i] === 40 ? 'length' : 'stop');
  }
  const single = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 1 });
  assert.equal(r.usage?.prompt_tokens, single.usage?.prompt_tokens);
  assert.equal(
    r.usage?.completion_tokens,
    words.reduce((a, b) => a + b, 0),
  );
});

test('a streamed completion of n choices: each index its tokens and its finish, then the usage', async () => {
  const stream = await client.completions.create({
    model: MODEL,
    prompt: 'Count to five.',
    n: 4,
    max_tokens: 5,
    ignore_eos: true,
    stream: true,
    stream_options: { include_usage: true },
  } as OpenAI.CompletionCreateParamsStreaming);
  const tokens = [0, 0, 0, 0];
  const finishes: (string | null)[] = [null, null, null, null];
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      assert.equal(finishes[c.index], null, `choice ${c.index} went on after its finish`);
      if (c.text) tokens[c.index]++;
      if (c.finish_reason) finishes[c.index] = c.finish_reason;
    }
  }
  assert.deepEqual(tokens, [5, 5, 5, 5]);
  assert.deepEqual(finishes, ['length', 'length', 'length', 'length']);
  assert.equal(usage?.completion_tokens, 20);
});

test('the prompt is computed once: every other choice finds it in the prefix cache', async () => {
  const before = engine.backend.stats().prefixHitTokens;
  const prompt = 'word '.repeat(600);
  const r = await client.completions.create({ model: MODEL, prompt, n: 5, max_tokens: 2 });
  const p = r.usage?.prompt_tokens ?? 0;
  assert.ok(p > 500, `prompt of ${p} tokens`);
  // All but the prompt's last block, for each choice after the first (16-token blocks).
  const hit = Math.floor((p - 1) / 16) * 16;
  assert.equal(engine.backend.stats().prefixHitTokens - before, 4 * hit);
});

test('a client that leaves mid-stream cancels every choice', async () => {
  const stream = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'Write at length.' }],
    n: 6,
    max_tokens: 2000,
    ignore_eos: true,
    stream: true,
  } as OpenAI.ChatCompletionCreateParamsStreaming);
  let seen = 0;
  for await (const chunk of stream) {
    if (chunk.choices[0]?.delta.content) seen++;
    if (seen === 30) break;
  }
  for (let i = 0; i < 500 && engine.backend.inFlight > 0; i++)
    await new Promise((r) => setTimeout(r, 2));
  assert.equal(engine.backend.inFlight, 0);
});

test('under a V0 engine version several choices are refused, naming n', async () => {
  const v0 = await serveEngine({
    profile: 'const:step_ms=2',
    seed: 1,
    port: 0,
    engineVersion: 'vllm-0.6',
  });
  try {
    const res = await fetch(`${v0.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: 'hi', n: 2 }),
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { param: string; message: string } };
    assert.equal(body.error.param, 'n');
    assert.match(body.error.message, /^n: expected 1 under this engine version .*got 2$/);
  } finally {
    await v0.close();
  }
});
