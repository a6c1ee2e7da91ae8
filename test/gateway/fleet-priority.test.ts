// `goodput serve --scheduling-policy priority` on its embedded fleet, engines on their own thread,
// through a real process: each request reaches its engine with its class's band as vLLM's
// priority, so an interactive request sent after a batch one is served before it by an engine
// with one slot, where an engine scheduling first come, first served serves them in order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServe } from './process-kit.ts';

/** Sends a streaming chat of `cls`; resolves with when its first token came (performance.now). */
async function firstTokenAt(url: string, cls: string, maxTokens: number): Promise<number> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goodput-class': cls },
    body: JSON.stringify({
      model: 'llama-3-8b',
      messages: [{ role: 'user', content: 'Count.' }],
      max_tokens: maxTokens,
      ignore_eos: true,
      stream: true,
    }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  let text = '';
  let at: number | undefined;
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    text += Buffer.from(r.value).toString();
    if (at === undefined && /"content":"[^"]/.test(text)) at = performance.now();
  }
  assert.ok(at !== undefined, text);
  return at;
}

/** A long batch request takes the one slot; a batch then an interactive one queue behind it. */
async function order(schedulingArgs: readonly string[]): Promise<string[]> {
  const gw = await startServe([
    '--policy',
    'baseline-vllm',
    '--fleet-thread',
    '--replicas',
    '1',
    '--max-num-seqs',
    '1',
    '--profile',
    'const:step_ms=10',
    ...schedulingArgs,
  ]);
  const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));
  const running = firstTokenAt(gw.url, 'batch', 150);
  await sleep(150);
  const batch = firstTokenAt(gw.url, 'batch', 5);
  await sleep(100);
  const interactive = firstTokenAt(gw.url, 'interactive', 5);
  const [b, i] = await Promise.all([batch, interactive, running]);
  gw.proc.child.kill('SIGTERM');
  await gw.proc.exited;
  return b < i ? ['batch', 'interactive'] : ['interactive', 'batch'];
}

test("under priority scheduling the engine on the fleet's thread serves by the class's band", async () => {
  assert.deepEqual(await order(['--scheduling-policy', 'priority']), ['interactive', 'batch']);
  assert.deepEqual(await order([]), ['batch', 'interactive'], 'first come, first served');
});
