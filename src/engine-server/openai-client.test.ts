// The engine server as a user meets it: the official `openai` client over real HTTP on an
// ephemeral port, and for the streaming tests in-process too (the engine's other way to
// stream). A 2 ms constant step keeps every request to a few tens of milliseconds.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { estimateChatTokens, estimateCompletionTokens } from '../openai/prompt-tokens.ts';
import { serveEngine, type ListeningEngineServer } from './serve.ts';

const FAST = { profile: 'const:step_ms=2', seed: 7, port: 0 } as const;
const MODEL = 'llama-3-8b';

let engine: ListeningEngineServer;
let client: OpenAI;

const clientFor = (e: ListeningEngineServer) =>
  new OpenAI({ baseURL: `${e.url}/v1`, apiKey: 'x', maxRetries: 0 });

/**
 * The two ways the engine streams: on its socket, written straight to Node's response; and
 * in-process (`app.request`), as a web stream. The streaming tests run over both.
 */
const PATHS = [
  ['socket', clientFor],
  [
    'in-process',
    (e: ListeningEngineServer) =>
      new OpenAI({
        baseURL: 'http://engine/v1',
        apiKey: 'x',
        maxRetries: 0,
        fetch: (url, init) => Promise.resolve(e.app.request(url, init)),
      }),
  ],
] as const;

before(async () => {
  engine = await serveEngine(FAST);
  client = clientFor(engine);
});

after(() => engine.close());

/** Polls `check` on the next turns of the event loop until it holds (no fixed sleeps). */
async function eventually(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000 && !check(); i++) await new Promise((r) => setTimeout(r, 2));
  assert.ok(check(), what);
}

test('non-streaming chat: the text has one word per completion token, usage adds up', async () => {
  const messages = [
    { role: 'system' as const, content: 'You are terse.' },
    { role: 'user' as const, content: 'Name three prime numbers.' },
  ];
  const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 12 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, MODEL);
  const choice = r.choices[0];
  assert.equal(choice.message.role, 'assistant');
  const words = (choice.message.content ?? '').split(' ').length;
  assert.ok(r.usage !== undefined);
  assert.equal(r.usage.prompt_tokens, estimateChatTokens({ messages }));
  assert.equal(r.usage.completion_tokens, words);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + words);
  assert.ok(words >= 1 && words <= 12);
  assert.equal(choice.finish_reason, words === 12 ? 'length' : 'stop');
});

test('non-streaming text completion with ignore_eos produces exactly max_tokens', async () => {
  const r = await client.completions.create({
    model: MODEL,
    prompt: 'Once upon a time',
    max_tokens: 9,
    // vLLM's non-standard field, sent as the client sends any extra body field.
    ignore_eos: true,
  } as OpenAI.CompletionCreateParamsNonStreaming);
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices[0].text.split(' ').length, 9);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.deepEqual(r.usage, {
    prompt_tokens: estimateCompletionTokens('Once upon a time'),
    completion_tokens: 9,
    total_tokens: estimateCompletionTokens('Once upon a time') + 9,
    // As vLLM with --enable-prompt-tokens-details: none of a first prompt is cached.
    prompt_tokens_details: { cached_tokens: 0 },
  });
});

for (const [over, clientOf] of PATHS) {
  test(`streaming chat with include_usage: one content chunk per completion token (${over})`, async () => {
    const stream = await clientOf(engine).chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Stream me something.' }],
      max_tokens: 20,
      stream: true,
      stream_options: { include_usage: true },
    });
    let contentChunks = 0;
    let roleChunks = 0;
    let finish: string | null = null;
    let used: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (choice?.delta.role === 'assistant') roleChunks++;
      if (choice?.delta.content) contentChunks++;
      if (choice?.finish_reason) finish = choice.finish_reason;
      if (chunk.usage) used = chunk.usage;
    }
    assert.equal(roleChunks, 1);
    assert.ok(used);
    assert.equal(used.completion_tokens, contentChunks);
    assert.equal(used.total_tokens, used.prompt_tokens + contentChunks);
    assert.ok(finish === 'stop' || finish === 'length');
  });

  test(`streaming text completion with ignore_eos streams exactly max_tokens (${over})`, async () => {
    const stream = await clientOf(engine).completions.create({
      model: MODEL,
      prompt: 'Count:',
      max_tokens: 15,
      stream: true,
      stream_options: { include_usage: true },
      ignore_eos: true,
    } as OpenAI.CompletionCreateParamsStreaming);
    let pieces = 0;
    let used: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.text) pieces++;
      if (chunk.usage) used = chunk.usage;
    }
    assert.equal(pieces, 15);
    assert.equal(used?.completion_tokens, 15);
  });
}

test('/v1/models lists the served model name', async () => {
  const named = await serveEngine({ ...FAST, servedModelName: 'my-llama' });
  try {
    const page = await clientFor(named).models.list();
    assert.deepEqual(
      page.data.map((m) => m.id),
      ['my-llama'],
    );
    const r = await clientFor(named).chat.completions.create({
      model: 'my-llama',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 2,
    });
    assert.equal(r.model, 'my-llama');
  } finally {
    await named.close();
  }
});

test('/metrics after traffic shows vLLM names with nonzero counters and prefix hits', async () => {
  // The same long system prompt twice, one after the other: the second reuses its blocks.
  const system = 'You are a meticulous assistant. '.repeat(40);
  for (let i = 0; i < 2; i++) {
    await client.chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: `question ${i}` },
      ],
      max_tokens: 4,
    });
  }
  const text = await (await fetch(`${engine.url}/metrics`)).text();
  const value = (series: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    assert.ok(line !== undefined, `missing ${series}`);
    return Number(line.slice(series.length + 1));
  };
  const m = `{model_name="${MODEL}"}`;
  for (const gauge of [
    'vllm:num_requests_running',
    'vllm:num_requests_waiting',
    'vllm:gpu_cache_usage_perc',
    'vllm:kv_cache_usage_perc',
  ]) {
    assert.ok(value(gauge + m) >= 0);
  }
  for (const counter of [
    'vllm:prompt_tokens_total',
    'vllm:generation_tokens_total',
    'vllm:prefix_cache_queries_total',
    'vllm:prefix_cache_hits_total',
    'vllm:time_to_first_token_seconds_count',
    'vllm:inter_token_latency_seconds_count',
    'vllm:time_per_output_token_seconds_count',
    'vllm:e2e_request_latency_seconds_count',
    'vllm:request_queue_time_seconds_count',
    'vllm:request_prefill_time_seconds_count',
    'vllm:request_decode_time_seconds_count',
    'vllm:request_inference_time_seconds_count',
    'vllm:request_prompt_tokens_count',
    'vllm:request_generation_tokens_count',
  ]) {
    assert.ok(value(counter + m) > 0, counter);
  }
  // A finished request's phases as vLLM splits them: running is prefill then decode, and the
  // end-to-end time holds queued and running. Token buckets 1, 2, 5, … up to the context.
  const sum = (h: string) => value(`vllm:request_${h}_sum${m}`);
  const running = sum('prefill_time_seconds') + sum('decode_time_seconds');
  assert.ok(Math.abs(running - sum('inference_time_seconds')) < 1e-9);
  const e2e = value(`vllm:e2e_request_latency_seconds_sum${m}`);
  assert.ok(sum('queue_time_seconds') + sum('inference_time_seconds') <= e2e + 1e-9);
  assert.match(
    text,
    /^vllm:request_prompt_tokens_bucket\{le="5000",model_name="llama-3-8b"\} \d+$/m,
  );
  assert.doesNotMatch(text, /vllm:request_prompt_tokens_bucket\{le="10000"/);
  assert.match(text, /# TYPE vllm:num_preemptions_total counter/);
  // The cache's configuration as vLLM's info gauge: block size and GPU blocks in the labels.
  assert.match(
    text,
    /^vllm:cache_config_info\{block_size="16",num_gpu_blocks="\d+",num_cpu_blocks="\d+",enable_prefix_caching="true",gpu_memory_utilization="0\.9"\} 1$/m,
  );
});

for (const [over, clientOf] of PATHS) {
  test(`aborting a stream mid-way cancels it in the engine and frees its KV (${over})`, async () => {
    const ac = new AbortController();
    const stream = await clientOf(engine).chat.completions.create(
      {
        model: MODEL,
        messages: [{ role: 'user', content: 'A very long answer, please.' }],
        max_tokens: 5000,
        stream: true,
        ignore_eos: true,
      } as OpenAI.ChatCompletionCreateParamsStreaming,
      { signal: ac.signal },
    );
    const abortsBefore = engine.backend.counters().ended.abort;
    let seen = 0;
    try {
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta.content) seen++;
        if (seen === 3) {
          assert.equal(engine.backend.load().running, 1);
          assert.ok(engine.backend.load().kvUsedBlocks > 0);
          ac.abort();
        }
      }
    } catch (e) {
      // The client either ends the iteration quietly or throws its abort error.
      assert.ok(e instanceof OpenAI.APIUserAbortError, String(e));
    }
    assert.equal(seen, 3);
    await eventually(() => {
      const load = engine.backend.load();
      return load.running === 0 && load.waiting === 0 && load.kvUsedBlocks === 0;
    }, 'the engine still holds the aborted request');
    assert.equal(engine.backend.counters().ended.abort, abortsBefore + 1);
    assert.equal(engine.backend.inFlight, 0);
  });

  test(`crash injection breaks a stream after some tokens, with no finish (${over})`, async () => {
    const crashing = await serveEngine({ ...FAST, faults: { crashRate: 1 } });
    try {
      const stream = await clientOf(crashing).chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: 'hello' }],
        max_tokens: 10,
        stream: true,
        ignore_eos: true,
      } as OpenAI.ChatCompletionCreateParamsStreaming);
      let seen = 0;
      const err = await (async () => {
        try {
          for await (const chunk of stream) if (chunk.choices[0]?.delta.content) seen++;
        } catch (e) {
          return e;
        }
        return null;
      })();
      assert.ok(err !== null, 'the stream ended normally');
      assert.ok(!(err instanceof OpenAI.APIError) || err instanceof OpenAI.APIConnectionError);
      assert.equal(seen, 5, 'a crash comes half-way through');
      await eventually(
        () => crashing.backend.load().kvUsedBlocks === 0,
        'crashed request holds KV',
      );
    } finally {
      await crashing.close();
    }
  });
}

test('the Responses API, streamed on both paths and whole: the chat it is, as its items', async () => {
  const input = 'Name three prime numbers.';
  const chatPrompt = estimateChatTokens({ messages: [{ role: 'user', content: input }] });
  for (const [name, make] of PATHS) {
    const stream = make(engine).responses.stream({
      model: MODEL,
      input,
      max_output_tokens: 8,
      ignore_eos: true,
      // vLLM's, which its Responses server takes: the client's types do not list it.
    } as never);
    let deltas = 0;
    for await (const event of stream) if (event.type === 'response.output_text.delta') deltas++;
    const r = await stream.finalResponse();
    assert.equal(deltas, 8, `${name}: a delta per token`);
    assert.equal(r.status, 'incomplete', name);
    assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal(r.output_text.split(' ').length, 8, name);
    assert.equal(r.usage?.input_tokens, chatPrompt, `${name}: prompt sized as the chat it is`);
    assert.ok(r.id.startsWith('resp_'), r.id);
  }
  const whole = await client.responses.create({
    model: MODEL,
    input,
    tools: [{ type: 'function', name: 'lookup', parameters: {}, strict: false }],
    tool_choice: 'required',
    max_output_tokens: 4,
  });
  const call = whole.output.find((o) => o.type === 'function_call');
  assert.equal(call?.name, 'lookup', JSON.stringify(whole.output));
  assert.match(call.arguments, /^\{"input": "/);
  assert.equal(whole.usage?.output_tokens, 4);
  await assert.rejects(
    client.responses.create({ model: MODEL, input, text: { format: { type: 'json_object' } } }),
    /400 text\.format: not supported by the simulated engine/,
  );
  // An engine keeps no responses, as vLLM without its store: the next turn comes whole.
  await assert.rejects(
    client.responses.create({ model: MODEL, input, previous_response_id: whole.id }),
    /400 previous_response_id: not supported: the simulated engine stores no responses; send the whole conversation in input/,
  );
  await assert.rejects(
    client.responses.create({ model: MODEL, input, background: true }),
    /400 background: not supported: the simulated engine stores no responses to poll/,
  );
});
