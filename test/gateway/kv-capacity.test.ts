// Backends whose KV caches are not the size the engine flags plan: the gateway reads each one's
// from its /metrics (vLLM's cache_config_info), exports it, says where the plan is off, admits a
// prompt the plan would call too long, and gives a small cache no more than it holds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { engines, gateway, postChat, until, MODEL } from './gateway-kit.ts';
import { memoryOpsLog } from '../../src/gateway/ops-log.ts';

/** A user message of about 7 tokens a repeat. */
const promptOf = (repeats: number) => 'the night shift logs again, '.repeat(repeats);

/** The sum of the samples of `name` (with `labels` first, if given) in the exposition at `url`. */
async function metric(url: string, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{${labels}`) || line.startsWith(`${name} `)) {
      sum += Number(line.split(' ').pop());
    }
  }
  return sum;
}

test('a prompt past the KV the flags plan is served where a backend reports room for it', async () => {
  const long = { model: 'llama-3.1-8b', maxModelLen: 32_768 };
  const [a] = await engines(1, { ...long, servedModelName: MODEL, kvBlocks: 2_100 });
  const [b] = await engines(1, { ...long, servedModelName: MODEL, kvBlocks: 8_000 });
  const log = memoryOpsLog();
  // The flags plan 2,048 blocks of 16 tokens: one sequence of the context, 32,768 tokens a
  // replica, of which admission keeps 5% free: 31,130 usable.
  const gw = await gateway([a, b], 'goodput', { engine: { ...long, kvBlocks: 2_048 }, log });
  const capacity = (i: number) =>
    metric(gw.url, 'goodput_backend_kv_capacity_tokens', `backend="backend-${i}"`);
  await until(async () => (await capacity(0)) > 0 && (await capacity(1)) > 0);
  assert.deepEqual([await capacity(0), await capacity(1)], [33_600, 128_000]);
  const warned = log.lines.filter((l) => l.level === 'warn').map((l) => l.fields);
  assert.deepEqual(warned, [
    { backend: 'backend-1', kv_capacity_tokens: 128_000, planned_kv_tokens: 32_768 },
  ]);
  assert.match(log.lines.find((l) => l.level === 'warn')?.msg ?? '', /as --kv-blocks/);
  assert.match(log.lines[0].msg, /holds 33600 KV tokens where the engine flags plan 32768/);
  // About 32,000 tokens: past what the plan leaves usable, within the context and what the
  // second backend holds.
  const res = await postChat(gw.url, {
    messages: [{ role: 'user', content: promptOf(4_640) }],
    max_tokens: 8,
  });
  const body = await res.text();
  assert.equal(res.status, 200, body);
  const { usage } = JSON.parse(body) as { usage: { prompt_tokens: number } };
  assert.ok(usage.prompt_tokens > 31_130, `prompt_tokens ${usage.prompt_tokens}`);
});

test('a backend whose cache is smaller than planned is given no more than it holds', async () => {
  // The flags plan 8,000 blocks (128,000 tokens) a replica; the first holds 600 (9,600 tokens).
  const [small] = await engines(1, { kvBlocks: 600 });
  const [big] = await engines(1, { kvBlocks: 8_000 });
  const gw = await gateway([small, big], 'goodput', { engine: { kvBlocks: 8_000 } });
  await until(async () => (await metric(gw.url, 'goodput_backend_kv_capacity_tokens')) > 0);
  // Each stream reserves about 6,000 prompt and 2,000 output tokens: one fits the small cache.
  const streams: AbortController[] = [];
  for (let i = 0; i < 6; i++) {
    const leave = new AbortController();
    streams.push(leave);
    const res = await postChat(
      gw.url,
      {
        messages: [{ role: 'user', content: `${i} ${promptOf(880)}` }],
        max_tokens: 2_000,
        ignore_eos: true,
        stream: true,
      },
      {},
      leave.signal,
    );
    assert.equal(res.status, 200);
    // Its first token: it runs on an engine before the next is sent.
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    for (let text = ''; !/"content":"[^"]/.test(text);) {
      text += Buffer.from((await reader.read()).value ?? []).toString();
    }
  }
  const held = async (e: { url: string }) =>
    (await metric(e.url, 'vllm:num_requests_running')) +
    (await metric(e.url, 'vllm:num_requests_waiting'));
  const [onSmall, onBig] = [await held(small), await held(big)];
  for (const s of streams) s.abort();
  assert.deepEqual([onSmall, onBig], [1, 5], 'the small cache holds one, the large one the rest');
});
