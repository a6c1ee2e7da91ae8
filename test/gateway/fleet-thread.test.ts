// `goodput serve --fleet-thread`: the embedded engines on a thread of their own, through a real
// process — streams complete with every token, a client that goes away frees its request in the
// engine, a prompt past the engine's context is refused in the engine's words, a prompt sent
// again says what the engine's prefix cache served, a text completion's echo starts with its
// prompt, a `stop` string ends the reply, and SIGTERM lets a stream in flight finish before the
// process exits 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServe, until } from './process-kit.ts';

/** `goodput serve ARGS`, once it says it is ready: its fleet's thread has reported its engines. */
async function readyServe(args: string[]) {
  const gw = await startServe(args);
  await until('the fleet ready', async () => (await fetch(`${gw.url}/readyz`)).status === 200);
  return gw;
}

const body = (maxTokens: number) =>
  JSON.stringify({
    model: 'llama-3-8b',
    messages: [{ role: 'user', content: 'tell me about the thread' }],
    max_tokens: maxTokens,
    ignore_eos: true,
    stream: true,
  });

async function stream(url: string, maxTokens: number, signal?: AbortSignal) {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: body(maxTokens),
    signal,
  });
  const raw = await res.text();
  const tokens = raw.split('\n').filter((l) => /"content":"[^"]/.test(l)).length;
  return { status: res.status, raw, tokens };
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `))
      sum += Number(line.split(' ').pop());
  }
  return sum;
}

/** A whole chat of one user message: its status and its JSON body. */
async function askWhole<T>(
  url: string,
  content: string,
  maxTokens: number,
  more: Record<string, unknown> = {},
) {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'llama-3-8b',
      messages: [{ role: 'user', content }],
      max_tokens: maxTokens,
      ...more,
    }),
  });
  return { status: res.status, json: (await res.json()) as T };
}

/**
 * A prompt the engine's context cannot hold, though the gateway could not be sure from its
 * estimate: the engine's refusal reaches the client in the engine's own words, as a vLLM's would.
 */
async function refusedAsTheEngineWordsIt(url: string): Promise<void> {
  type Refusal = { error: { message: string; code: string } };
  const long = 'the backup job fails again '.repeat(1_800);
  const { status, json } = await askWhole<Refusal>(url, long, 16);
  const { error } = json;
  assert.equal(status, 400);
  assert.equal(error.code, 'context_length_exceeded');
  assert.match(
    error.message,
    /^This model's maximum context length is 8192 tokens\. However, your request has \d+ input tokens \(estimated\)\. Please reduce the length of the input \(messages\)\.$/,
  );
}

test('--fleet-thread: streams, a cancel, and a drain on SIGTERM', async () => {
  const gw = await readyServe(['--fleet-thread', '--replicas', '2']);
  const served = await Promise.all([stream(gw.url, 20), stream(gw.url, 20), stream(gw.url, 20)]);
  for (const s of served) {
    assert.equal(s.status, 200);
    assert.equal(s.tokens, 20);
    assert.ok(s.raw.endsWith('data: [DONE]\n\n'));
  }
  // A client that leaves mid-stream: the engine frees its request, the next one is served.
  const leaving = new AbortController();
  const left = stream(gw.url, 2_000, leaving.signal).catch((e: Error) => e);
  await new Promise((ok) => setTimeout(ok, 300));
  leaving.abort();
  assert.ok((await left) instanceof Error);
  const freed = async () => (await metric(gw.url, 'goodput_backend_kv_usage_ratio')) === 0;
  for (let i = 0; i < 50 && !(await freed()); i++) await new Promise((ok) => setTimeout(ok, 100));
  assert.ok(await freed(), 'the cancelled request left the engine: its KV is free');
  assert.equal(await metric(gw.url, 'goodput_cancels_total'), 1);
  await refusedAsTheEngineWordsIt(gw.url);
  // SIGTERM with a stream under way: it runs to its end, then the process exits 0.
  const last = stream(gw.url, 40);
  await new Promise((ok) => setTimeout(ok, 200));
  gw.proc.child.kill('SIGTERM');
  const s = await last;
  assert.equal(s.status, 200);
  assert.equal(s.tokens, 40);
  assert.deepEqual(await gw.proc.exited, { code: 0, signal: null }, gw.proc.output());
});

/** A prompt sent twice: the second time the engine's prefix cache serves part of it, and says so. */
async function servedFromCacheAgain(url: string): Promise<void> {
  type Usage = { prompt_tokens: number; prompt_tokens_details?: { cached_tokens: number } };
  const question = 'the same long question again '.repeat(30);
  const ask = async () => (await askWhole<{ usage: Usage }>(url, question, 2)).json.usage;
  assert.equal((await ask()).prompt_tokens_details?.cached_tokens, 0);
  const again = await ask();
  const cached = again.prompt_tokens_details?.cached_tokens ?? 0;
  assert.ok(cached > 0 && cached <= again.prompt_tokens, `cached ${cached}`);
}

/** A text completion's `echo`: its reply starts with the prompt, and usage counts the reply. */
async function echoesThePrompt(url: string): Promise<void> {
  const prompt = 'Once upon a time';
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'llama-3-8b',
      prompt,
      max_tokens: 3,
      ignore_eos: true,
      echo: true,
    }),
  });
  type Whole = { choices: { text: string }[]; usage: { completion_tokens: number } };
  const raw = await res.text();
  assert.equal(res.status, 200, raw);
  const { choices, usage } = JSON.parse(raw) as Whole;
  assert.ok(choices[0].text.startsWith(prompt) && choices[0].text.length > prompt.length);
  assert.equal(usage.completion_tokens, 3);
}

/** A chat's `stop` string: the reply ends where it begins, finish `stop`, as vLLM's does. */
async function stopsAtItsString(url: string): Promise<void> {
  type Whole = { choices: { message: { content: string }; finish_reason: string }[] };
  const { status, json } = await askWhole<Whole>(url, 'go on', 20, { stop: ['model'] });
  assert.equal(status, 200);
  const [choice] = json.choices;
  assert.deepEqual([choice.message.content, choice.finish_reason], ['the quick ', 'stop']);
}

test('with one replica on its thread, a prompt sent again says what its prefix cache served, and echo is served', async () => {
  const gw = await readyServe(['--fleet-thread', '--replicas', '1']);
  await servedFromCacheAgain(gw.url);
  await echoesThePrompt(gw.url);
  await stopsAtItsString(gw.url);
  gw.proc.child.kill('SIGTERM');
  assert.deepEqual(await gw.proc.exited, { code: 0, signal: null }, gw.proc.output());
});

test('without a fleet thread, an engine refuses in its own words too, and says what it cached', async () => {
  const gw = await readyServe(['--no-fleet-thread', '--replicas', '1']);
  await refusedAsTheEngineWordsIt(gw.url);
  await servedFromCacheAgain(gw.url);
  await echoesThePrompt(gw.url);
  await stopsAtItsString(gw.url);
  gw.proc.child.kill('SIGTERM');
  assert.deepEqual(await gw.proc.exited, { code: 0, signal: null }, gw.proc.output());
});
