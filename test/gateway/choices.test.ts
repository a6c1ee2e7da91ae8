// Several choices of one prompt (`n`, as RL rollouts and pass@k evaluations ask) through the
// gateway, read by the official `openai` client: in front of `goodput engine` over HTTP, and in
// front of the embedded fleet of a real `goodput serve` (on the gateway's thread and on its own).
// Each choice streams its tokens and its finish under its index, whole answers hold one reply per
// index, usage counts the prompt once and every choice's tokens, and admission reserves KV for
// each choice's output: the decision record says so, and the outcome counts every token.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { MODEL, engines, gateway, onTeardown } from './gateway-kit.ts';
import { startServe, until } from './process-kit.ts';

/** A streamed completion of `n` choices, read as a client reads it: each index's tokens and finish. */
async function streamed(client: OpenAI, n: number, maxTokens: number) {
  const stream = await client.completions.create({
    model: MODEL,
    prompt: 'Give a number.',
    n,
    max_tokens: maxTokens,
    ignore_eos: true,
    stream: true,
    stream_options: { include_usage: true },
  } as OpenAI.CompletionCreateParamsStreaming);
  const tokens = new Array<number>(n).fill(0);
  const finishes = new Array<string | null>(n).fill(null);
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      assert.ok(c.index < n, `choice ${c.index} of ${n}`);
      assert.equal(finishes[c.index], null, `choice ${c.index} went on after its finish`);
      if (c.text) tokens[c.index]++;
      if (c.finish_reason) finishes[c.index] = c.finish_reason;
    }
  }
  return { tokens, finishes, usage };
}

test('through the gateway to goodput engine: n choices streamed and whole, on the socket and in-process', async () => {
  const front = await gateway(await engines(2));
  for (const client of [front.client, front.inProcess]) {
    const s = await streamed(client, 4, 6);
    assert.deepEqual(s.tokens, [6, 6, 6, 6]);
    assert.deepEqual(s.finishes, ['length', 'length', 'length', 'length']);
    assert.equal(s.usage?.completion_tokens, 24);

    const whole = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Name a colour.' }],
      n: 3,
      max_tokens: 30,
    });
    assert.deepEqual(
      whole.choices.map((c) => c.index),
      [0, 1, 2],
    );
    const words = whole.choices.map((c) => (c.message.content ?? '').split(' ').length);
    for (const [i, c] of whole.choices.entries())
      assert.equal(c.finish_reason, words[i] === 30 ? 'length' : 'stop');
    assert.equal(
      whole.usage?.completion_tokens,
      words.reduce((a, b) => a + b, 0),
    );
  }
  // A chat of several choices that must call a tool: each choice its own call.
  const called = await front.client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'Weather?' }],
    tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }],
    tool_choice: 'required',
    n: 2,
    max_tokens: 8,
  });
  const ids = called.choices.map((c) => c.message.tool_calls?.[0]?.id);
  assert.equal(new Set(ids).size, 2, `call ids ${ids.join(', ')}`);
  for (const c of called.choices) {
    assert.equal(c.message.tool_calls?.[0]?.type, 'function');
    // A call cut at max_tokens ends as `length`, as vLLM ends it.
    assert.ok(['tool_calls', 'length'].includes(c.finish_reason), c.finish_reason);
  }
});

test('a client that leaves a stream of n choices mid-way: every choice stops upstream, the gateway serves on', async () => {
  const [engine] = await engines(1);
  const front = await gateway([engine]);
  const stream = await front.client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'Write at length.' }],
    n: 4,
    max_tokens: 2_000,
    ignore_eos: true,
    stream: true,
  } as OpenAI.ChatCompletionCreateParamsStreaming);
  let seen = 0;
  for await (const chunk of stream) {
    if (chunk.choices[0]?.delta.content) seen++;
    if (seen === 40) break;
  }
  await until('every choice ended upstream', () => engine.backend.inFlight === 0);
  assert.equal(engine.backend.inFlight, 0, 'every choice cancelled in the engine');
  const after = await front.client.completions.create({
    model: MODEL,
    prompt: 'hi',
    n: 2,
    max_tokens: 3,
  });
  assert.equal(after.choices.length, 2);
});

/**
 * A vLLM streaming two choices as vLLM does: a role chunk for each, then each choice's chunks as
 * its tokens come, the first ending on a chunk that carries its last token beside its finish, the
 * other on an empty one; the usage, [DONE]. `index` is the second choice's index as it says it.
 */
async function twoChoiceVllm(index = 1): Promise<{ readonly url: string }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/metrics')
        return res.end('vllm:num_requests_running 0\nvllm:num_requests_waiting 0\n');
      if (req.url === '/v1/models')
        return res.end(JSON.stringify({ data: [{ id: MODEL, object: 'model', parent: null }] }));
      const event = (choices: object[], more: object = {}) =>
        `data: ${JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', model: MODEL, choices, ...more })}\n\n`;
      const c = (i: number, delta: object, finish: string | null = null) => ({
        index: i,
        delta,
        logprobs: null,
        finish_reason: finish,
      });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(
        event([c(0, { role: 'assistant', content: '' })]) +
          event([c(index, { role: 'assistant', content: '' })]) +
          event([c(0, { content: 'A' })]) +
          event([c(index, { content: 'B' })]) +
          event([c(0, { content: 'C' }, 'stop')]) +
          event([c(index, { content: 'D' })]) +
          event([c(index, {}, 'length')]) +
          event([], { usage: { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 } }) +
          'data: [DONE]\n\n',
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onTeardown(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

test("a vLLM's interleaved choices: each reply whole and streamed, a finish beside its last token", async () => {
  const front = await gateway([await twoChoiceVllm()]);
  const asked = { model: MODEL, messages: [{ role: 'user' as const, content: 'hi' }], n: 2 };
  const whole = await front.client.chat.completions.create(asked);
  assert.deepEqual(
    whole.choices.map((c) => [c.index, c.message.content, c.finish_reason]),
    [
      [0, 'AC', 'stop'],
      [1, 'BD', 'length'],
    ],
  );
  assert.equal(whole.usage?.completion_tokens, 4);
  const text = ['', ''];
  const finishes: (string | null)[] = [null, null];
  for await (const chunk of await front.client.chat.completions.create({
    ...asked,
    stream: true,
  })) {
    for (const c of chunk.choices) {
      assert.equal(finishes[c.index], null, `choice ${c.index} went on after its finish`);
      text[c.index] += c.delta.content ?? '';
      if (c.finish_reason) finishes[c.index] = c.finish_reason;
    }
  }
  assert.deepEqual(
    [text, finishes],
    [
      ['AC', 'BD'],
      ['stop', 'length'],
    ],
  );
});

test('a backend that answers a choice not asked for has failed: a 502, and the gateway serves on', async () => {
  const front = await gateway([await twoChoiceVllm(7)]);
  const res = await fetch(`${front.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], n: 2 }),
  });
  assert.equal(res.status, 502);
  assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'upstream_error');
  assert.equal((await fetch(`${front.url}/readyz`)).status, 200);
});

const ADMIN = 'admin-secret';

for (const thread of [false, true]) {
  const where = thread ? 'its own thread' : "the gateway's thread";
  test(`goodput serve's embedded fleet on ${where}: n choices, KV reserved for each, every token counted`, async () => {
    const gw = await startServe([
      '--admin-token',
      ADMIN,
      '--profile',
      'const:step_ms=3',
      ...(thread ? ['--fleet-thread'] : []),
    ]);
    after(async () => {
      gw.proc.child.kill('SIGTERM');
      await gw.proc.exited;
    });
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const s = await streamed(client, 5, 8);
    assert.deepEqual(s.tokens, [8, 8, 8, 8, 8]);
    assert.equal(s.usage?.completion_tokens, 40);

    const decision = async (n: number) => {
      const res = await fetch(`${gw.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, prompt: 'Same prompt.', n, max_tokens: 8 }),
      });
      assert.equal(res.status, 200);
      const body = (await res.json()) as {
        choices: unknown[];
        usage: { completion_tokens: number };
      };
      assert.equal(body.choices.length, n);
      const id = res.headers.get('x-goodput-request-id') ?? '';
      const lookup = async () =>
        (await (
          await fetch(`${gw.url}/admin/decisions/${id}`, {
            headers: { authorization: `Bearer ${ADMIN}` },
          })
        ).json()) as {
          choices?: number;
          demand: { input_tokens: number; kv_reserved_tokens: number };
          outcome?: { output_tokens: number; state: string };
        };
      await until('its outcome recorded', async () => (await lookup()).outcome !== undefined);
      const looked = await lookup();
      assert.equal(looked.outcome?.state, 'completed');
      assert.equal(looked.outcome?.output_tokens, body.usage.completion_tokens);
      assert.equal(looked.choices, n > 1 ? n : undefined);
      return looked.demand.kv_reserved_tokens - looked.demand.input_tokens;
    };
    // Each choice's output is capped at 8: KV for 8 tokens of each.
    assert.equal(await decision(1), 8);
    assert.equal(await decision(6), 48);
  });
}

test("goodput serve's embedded fleet under vllm-0.6 refuses several choices as goodput engine does, naming n", async () => {
  for (const thread of [[], ['--fleet-thread']]) {
    const gw = await startServe([
      ...['--engine-version', 'vllm-0.6', '--profile', 'const:step_ms=3'],
      ...thread,
    ]);
    try {
      const res = await fetch(`${gw.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, prompt: 'hi', n: 2, max_tokens: 4 }),
      });
      assert.equal(res.status, 400);
      const body = (await res.json()) as { error: { param: string; message: string } };
      assert.equal(body.error.param, 'n');
      assert.match(body.error.message, /^n: expected 1 under this engine version .*got 2$/);
      const one = await fetch(`${gw.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, prompt: 'hi', n: 1, max_tokens: 4 }),
      });
      assert.equal(one.status, 200);
    } finally {
      gw.proc.child.kill('SIGTERM');
      await gw.proc.exited;
    }
  }
});
