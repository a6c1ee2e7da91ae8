// Log probabilities through `goodput serve`, as the official `openai` client asks for them: the
// request goes to a vLLM as sent; each token's log probabilities reach the client beside it,
// streamed (forwarded as they came, or rebuilt) and whole (joined in order), a text completion's
// `echo` with the prompt's before the reply's; the simulated engines, whose filler has none,
// refuse them by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MODEL, doorOnlyFleet, engines, gateway } from './gateway-kit.ts';
import { fakeVllm } from './fake-vllm.ts';

const entry = (token: string, logprob: number) => ({
  token,
  logprob,
  bytes: [...Buffer.from(token)],
  top_logprobs: [
    { token, logprob, bytes: [...Buffer.from(token)] },
    { token: '?', logprob: logprob - 2, bytes: [63] },
  ],
});
const TOKENS = [entry('Se', -0.05), entry('ven', -0.3), entry('.', -1.25)];
const DELTAS = TOKENS.map((e) => ({ content: e.token, logprobs: { content: [e] } }));
const ASKED = {
  model: MODEL,
  messages: [{ role: 'user' as const, content: 'Name a prime.' }],
  logprobs: true,
  top_logprobs: 2,
};

test("each token's log probabilities reach the client beside it, streamed and whole", async () => {
  for (const foreign of [false, true]) {
    const how = foreign ? 'rebuilt' : 'forwarded';
    const vllm = await fakeVllm(DELTAS, foreign);
    const front = await gateway([vllm]);
    const streamed: unknown[] = [];
    let text = '';
    for await (const chunk of await front.client.chat.completions.create({
      ...ASKED,
      stream: true,
    })) {
      const c = chunk.choices[0];
      if (c?.delta?.content) text += c.delta.content;
      if (c?.logprobs?.content) streamed.push(...c.logprobs.content);
    }
    assert.equal(text, 'Seven.', how);
    assert.deepEqual(streamed, TOKENS, how);

    const whole = await front.client.chat.completions.create(ASKED);
    assert.equal(whole.choices[0].message.content, 'Seven.', how);
    assert.deepEqual(whole.choices[0].logprobs, { content: TOKENS }, how);
    const sent = vllm.bodies.at(-1) as { logprobs: unknown; top_logprobs: unknown };
    assert.deepEqual([sent.logprobs, sent.top_logprobs], [true, 2], 'asked upstream as sent');
  }
});

/**
 * What vLLM streams for lm-evaluation-harness's loglikelihood request (`echo`, `logprobs: 1`,
 * `max_tokens: 1`): the prompt and the one token in its first chunk, the prompt's log
 * probabilities before the token's (the first prompt token's null: nothing comes before it).
 */
const ECHOED = {
  tokens: ['The', ' sky', ' is', ' blue'],
  token_logprobs: [null, -5.1, -1.2, -0.4],
  top_logprobs: [null, { ' sky': -5.1 }, { ' is': -1.2 }, { ' blue': -0.4 }],
  text_offset: [0, 3, 7, 10],
};

test("echo: the prompt and its log probabilities before the reply's, as a harness scores a continuation", async () => {
  for (const foreign of [false, true]) {
    const how = foreign ? 'rebuilt' : 'forwarded';
    const vllm = await fakeVllm(
      [{ content: 'The sky is blue', logprobs: ECHOED }],
      foreign,
      'length',
    );
    const front = await gateway([vllm]);
    const asked = { model: MODEL, prompt: 'The sky is', echo: true, logprobs: 1, max_tokens: 1 };
    const whole = await front.client.completions.create(asked);
    assert.equal(whole.choices[0].text, 'The sky is blue', how);
    assert.deepEqual(whole.choices[0].logprobs, ECHOED, how);
    assert.equal(whole.usage?.completion_tokens, 1, how);
    const sent = vllm.bodies.at(-1) as { echo: unknown; logprobs: unknown };
    assert.deepEqual([sent.echo, sent.logprobs], [true, 1], 'asked upstream as sent');

    const chunks = [];
    for await (const chunk of await front.client.completions.create({ ...asked, stream: true })) {
      const c = chunk.choices[0];
      if (c?.text) chunks.push({ text: c.text, logprobs: c.logprobs });
    }
    assert.deepEqual(chunks, [{ text: 'The sky is blue', logprobs: ECHOED }], how);
  }
});

test('without logprobs asked, a whole answer says null, as OpenAI writes it', async () => {
  const vllm = await fakeVllm();
  const front = await gateway([vllm]);
  const whole = await front.client.chat.completions.create({
    model: MODEL,
    messages: ASKED.messages,
  });
  assert.equal(whole.choices[0].logprobs, null);
});

test('log probabilities asked of the simulated fleet or engine: a 400 naming logprobs', async () => {
  const embedded = await doorOnlyFleet();
  const [engine] = await engines(1);
  for (const [url, server] of [
    [embedded.url, 'the simulated fleet'],
    [engine.url, 'the simulated engine'],
  ]) {
    for (const [path, body, shown] of [
      ['/v1/chat/completions', ASKED, 'true'],
      ['/v1/completions', { model: MODEL, prompt: 'x', logprobs: 1 }, '1'],
    ] as const) {
      const res = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 400, `${server} ${path}`);
      const { error } = (await res.json()) as { error: { message: string; param: string } };
      assert.equal(
        error.message,
        `logprobs: not supported by ${server}, whose filler has no token probabilities (expected false or absent), got ${shown}`,
      );
      assert.equal(error.param, 'logprobs');
    }
  }
});
