// vLLM's `stream_options.continuous_usage_stats`, as the official `openai` client sends it (an
// extra field): every chunk carries the usage so far — the prompt's tokens and its choice's —
// from `goodput engine`, through the gateway in front of it, on `goodput serve`'s embedded fleet,
// and passed to a vLLM only when the client asked.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { MODEL, engines, gateway } from './gateway-kit.ts';
import { fakeVllm } from './fake-vllm.ts';
import { startServe } from './process-kit.ts';

type Usage = { prompt_tokens: number; completion_tokens: number; total_tokens: number };

/** A streamed chat of `n` choices, `max_tokens` each, asking for the usage on every chunk. */
async function streamed(url: string, n = 1, max_tokens = 5) {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'x', maxRetries: 0 });
  const params = {
    model: MODEL,
    messages: [{ role: 'user' as const, content: 'Count to five.' }],
    max_tokens,
    n,
    stream: true as const,
    stream_options: { include_usage: true, continuous_usage_stats: true },
  };
  const chunks: { choice: number | undefined; usage: Usage | null | undefined }[] = [];
  for await (const chunk of await client.chat.completions.create(params)) {
    chunks.push({ choice: chunk.choices[0]?.index, usage: chunk.usage as Usage | null });
  }
  return chunks;
}

/**
 * Each choice's chunks carry its tokens so far, from 0 at its role chunk to `max` at its finish,
 * over the one prompt; the last chunk is the whole usage.
 */
function checkUsage(chunks: Awaited<ReturnType<typeof streamed>>, n: number, max: number) {
  const last = chunks.at(-1);
  assert.equal(last?.choice, undefined, 'the usage chunk has no choices');
  const prompt = last?.usage?.prompt_tokens ?? 0;
  assert.ok(prompt > 0);
  assert.equal(last?.usage?.completion_tokens, n * max);
  for (let c = 0; c < n; c++) {
    const mine = chunks.filter((k) => k.choice === c).map((k) => k.usage);
    assert.ok(mine.length >= max + 1, `choice ${c}: ${mine.length} chunks`);
    for (const u of mine) {
      assert.ok(u != null, `choice ${c}: a chunk without usage`);
      assert.equal(u.prompt_tokens, prompt);
      assert.equal(u.total_tokens, u.prompt_tokens + u.completion_tokens);
    }
    const counts = mine.map((u) => (u as Usage).completion_tokens);
    assert.deepEqual(
      counts,
      [...counts].sort((a, b) => a - b),
      `choice ${c}: counts only grow`,
    );
    assert.equal(counts.at(-1), max, `choice ${c}: its finish carries its tokens`);
  }
}

const backends = await engines(1);

test('goodput engine, and the gateway in front of it: every chunk carries the usage so far', async () => {
  checkUsage(await streamed(backends[0].url), 1, 5);
  const front = await gateway(backends);
  checkUsage(await streamed(front.url), 1, 5);
  checkUsage(await streamed(front.url, 2, 4), 2, 4);
});

test("goodput serve's embedded fleet: every chunk carries the usage so far, each choice its own", async () => {
  const gw = await startServe(['--profile', 'const:step_ms=3']);
  after(async () => {
    gw.proc.child.kill('SIGTERM');
    await gw.proc.exited;
  });
  checkUsage(await streamed(gw.url), 1, 5);
  checkUsage(await streamed(gw.url, 3, 4), 3, 4);
});

test('a vLLM is asked for the usage on every chunk only when the client asked for it', async () => {
  const vllm = await fakeVllm();
  const front = await gateway([vllm]);
  const client = new OpenAI({ baseURL: `${front.url}/v1`, apiKey: 'x', maxRetries: 0 });
  const asked = { model: MODEL, messages: [{ role: 'user' as const, content: 'x' }] };
  const sent = () => (vllm.bodies.at(-1) as { stream_options: object }).stream_options;
  for await (const _ of await client.chat.completions.create({ ...asked, stream: true }));
  assert.deepEqual(sent(), { include_usage: true });
  const options = { include_usage: true, continuous_usage_stats: true };
  for await (const _ of await client.chat.completions.create({
    ...asked,
    stream: true,
    stream_options: options,
  }));
  assert.deepEqual(sent(), options);
});
