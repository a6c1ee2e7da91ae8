// OpenAI's Responses API through the gateway, as the official `openai` client sends and reads
// it: served over a vLLM's chat completions, its thinking, text and tool calls come back as the
// Responses API's items, streamed as its events (which the client's own accumulator checks) or
// whole; an agent's next turn, its last output carried back as input, goes upstream as the chat
// history it is; its conversation id (prompt_cache_key) keeps it on one backend; the simulated
// fleet serves it end to end; a burst past capacity is served or refused with a retry time; a
// crash mid-stream, or a SIGTERM past the drain time, ends it with response.failed naming why;
// what needs a stored conversation or a built-in tool is a 400 naming the field, counted and
// recorded like any refusal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { MODEL, engines, gateway, metricValue, policyWith, until } from './gateway-kit.ts';
import { startServe } from './process-kit.ts';
import { fakeVllm } from './fake-vllm.ts';

const WEATHER = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'The weather in a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};
const TIME = {
  type: 'function' as const,
  name: 'get_time',
  parameters: { type: 'object', properties: {} },
  strict: false,
};
const ASKED = {
  model: MODEL,
  instructions: 'Answer briefly.',
  input: 'Weather and time in Oslo?',
  tools: [WEATHER, TIME],
  tool_choice: 'auto' as const,
};

/** A reasoning model's reply as vLLM streams it: thinking, a word, then two calls. */
const PIECES = [
  { reasoning: 'The user' },
  { reasoning: ' wants both.' },
  { content: 'Checking.' },
  { tool_calls: [{ index: 0, id: 'call-w', type: 'function', function: { name: 'get_weather' } }] },
  { tool_calls: [{ index: 0, function: { arguments: '{"city": ' } }] },
  { tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] },
  { tool_calls: [{ index: 1, id: 'call-t', type: 'function', function: { name: 'get_time' } }] },
  { tool_calls: [{ index: 1, function: { arguments: '{}' } }] },
];

/** The items the reply is, as the Responses API lists them. */
function expectItems(output: readonly OpenAI.Responses.ResponseOutputItem[], how: string): void {
  assert.deepEqual(
    output.map((o) => o.type),
    ['reasoning', 'message', 'function_call', 'function_call'],
    how,
  );
  const [thought, said, weather, time] = output as [
    OpenAI.Responses.ResponseReasoningItem,
    OpenAI.Responses.ResponseOutputMessage,
    OpenAI.Responses.ResponseFunctionToolCall,
    OpenAI.Responses.ResponseFunctionToolCall,
  ];
  assert.equal(thought.content?.[0].text, 'The user wants both.', how);
  assert.equal((said.content[0] as OpenAI.Responses.ResponseOutputText).text, 'Checking.', how);
  assert.deepEqual(
    [weather.call_id, weather.name, weather.arguments, weather.status],
    ['call-w', 'get_weather', '{"city": "Oslo"}', 'completed'],
    how,
  );
  assert.deepEqual([time.call_id, time.name, time.arguments], ['call-t', 'get_time', '{}'], how);
  assert.equal(new Set(output.map((o) => o.id)).size, 4, `${how}: each item its own id`);
}

test("a vLLM's thinking, text and tool calls come back as the Responses API's items, streamed and whole", async () => {
  const vllm = await fakeVllm(PIECES, false, 'tool_calls');
  const front = await gateway([vllm]);
  // The client's own helper checks every event against the items it announced.
  const stream = front.client.responses.stream(ASKED);
  const kinds: string[] = [];
  for await (const event of stream) kinds.push(event.type);
  const streamed = await stream.finalResponse();
  expectItems(streamed.output, 'streamed');
  assert.equal(streamed.status, 'completed');
  assert.equal(streamed.output_text, 'Checking.');
  assert.deepEqual(streamed.usage, {
    input_tokens: 9,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: PIECES.length,
    output_tokens_details: { reasoning_tokens: 2 },
    total_tokens: 9 + PIECES.length,
  });
  assert.deepEqual(kinds.slice(0, 2), ['response.created', 'response.in_progress']);
  assert.equal(kinds.at(-1), 'response.completed');
  assert.equal(kinds.filter((k) => k === 'response.output_text.delta').length, 1);
  assert.equal(kinds.filter((k) => k === 'response.function_call_arguments.delta').length, 3);
  assert.ok(streamed.id.startsWith('resp_'), streamed.id);

  const whole = await front.client.responses.create(ASKED);
  expectItems(whole.output, 'whole');
  assert.equal(whole.output_text, 'Checking.');
  assert.equal(whole.instructions, 'Answer briefly.');

  // Upstream it is the chat completion it is.
  const sent = vllm.bodies.at(-1) as Record<string, unknown>;
  assert.deepEqual(sent.messages, [
    { role: 'system', content: 'Answer briefly.' },
    { role: 'user', content: 'Weather and time in Oslo?' },
  ]);
  assert.deepEqual(sent.tools, [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'The weather in a city.',
        parameters: WEATHER.parameters,
        strict: false,
      },
    },
    {
      type: 'function',
      function: { name: 'get_time', parameters: TIME.parameters, strict: false },
    },
  ]);
  assert.equal(sent.tool_choice, 'auto');
  assert.equal(await metricValue(front.url, 'goodput_completed_requests_total'), 2);
  const arrived = (endpoint: string) =>
    metricValue(front.url, 'goodput_api_requests_total', { endpoint });
  assert.deepEqual([await arrived('responses'), await arrived('chat')], [2, 0], 'by endpoint');
});

test("an agent's next turn, its last output and the tools' answers as input, goes upstream as chat history", async () => {
  const vllm = await fakeVllm([{ content: 'Rainy,' }, { content: ' 14:05.' }]);
  const first = await fakeVllm(PIECES, false, 'tool_calls');
  const front = await gateway([first]);
  const turn = await front.client.responses.stream(ASKED).finalResponse();
  const next = await gateway([vllm]);
  const answer = await next.client.responses.create({
    ...ASKED,
    input: [
      { role: 'user', content: ASKED.input },
      // As the client's stream helper gave them: with its parse of each call's arguments.
      ...(turn.output as OpenAI.Responses.ResponseInputItem[]),
      { type: 'function_call_output', call_id: 'call-w', output: '{"rain": true}' },
      { type: 'function_call_output', call_id: 'call-t', output: '"14:05"' },
    ],
  });
  assert.equal(answer.output_text, 'Rainy, 14:05.');
  const sent = vllm.bodies.at(-1) as { messages: unknown };
  assert.deepEqual(sent.messages, [
    { role: 'system', content: 'Answer briefly.' },
    { role: 'user', content: 'Weather and time in Oslo?' },
    // The thinking is not carried back, as chat templates drop past turns'.
    {
      role: 'assistant',
      content: [{ type: 'text', text: 'Checking.' }],
      tool_calls: [
        {
          id: 'call-w',
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city": "Oslo"}' },
        },
        { id: 'call-t', type: 'function', function: { name: 'get_time', arguments: '{}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call-w', content: '{"rain": true}' },
    { role: 'tool', tool_call_id: 'call-t', content: '"14:05"' },
  ]);
});

test('the simulated fleet serves the Responses API end to end: text cut at its limit, a call required', async () => {
  const fleet = await startServe(['--profile', 'const:step_ms=2']);
  const client = new OpenAI({ baseURL: `${fleet.url}/v1`, apiKey: 'none', maxRetries: 0 });
  const cut = await client.responses.create({ model: MODEL, input: 'Hi', max_output_tokens: 4 });
  assert.equal(cut.status, 'incomplete');
  assert.deepEqual(cut.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(cut.usage?.output_tokens, 4);
  assert.equal(cut.output_text.split(' ').length, 4, cut.output_text);
  // No model named: the one served, as vLLM and as the gateway's chat and completions take it.
  const unnamed = await client.responses.create({ input: 'Hi', max_output_tokens: 2 } as never);
  assert.equal((unnamed as { model: string }).model, MODEL);

  const stream = client.responses.stream({
    model: MODEL,
    input: 'Weather in Oslo?',
    tools: [WEATHER],
    tool_choice: 'required',
    max_output_tokens: 6,
  });
  const called = await stream.finalResponse();
  const call = called.output.find((o) => o.type === 'function_call');
  assert.equal(call?.name, 'get_weather', JSON.stringify(called.output));
  assert.match(call.arguments, /^\{"input": "/);

  // Its filler follows no form: a form asked for is refused by the name the client sent.
  for (const [held, message] of [
    [
      { text: { format: { type: 'json_object' } } },
      /^400 text\.format: not supported by the simulated fleet/,
    ],
    [
      { structured_outputs: { choice: ['a'] } },
      /^400 structured_outputs: not supported by the simulated fleet/,
    ],
    [
      { include: ['message.output_text.logprobs'] },
      /^400 include: message\.output_text\.logprobs not supported by the simulated fleet/,
    ],
  ] as const) {
    await assert.rejects(
      client.responses.create({ model: MODEL, input: 'x', ...held } as never),
      (e: Error) => {
        assert.match(e.message, message);
        return true;
      },
    );
  }
});

test("a vLLM's log probabilities, asked with include, go beside each delta and on the text", async () => {
  const entry = (token: string, logprob: number) => ({
    token,
    logprob,
    bytes: [...Buffer.from(token)],
    top_logprobs: [{ token, logprob, bytes: [...Buffer.from(token)] }],
  });
  const scored = [entry('Se', -0.05), entry('ven', -0.3)];
  const vllm = await fakeVllm(
    scored.map((e) => ({ content: e.token, logprobs: { content: [e] } })),
  );
  const front = await gateway([vllm]);
  const asked = {
    model: MODEL,
    input: 'Name a prime.',
    include: ['message.output_text.logprobs' as const],
    top_logprobs: 1,
  };
  const stream = front.client.responses.stream(asked);
  const beside: unknown[] = [];
  for await (const event of stream) {
    if (event.type === 'response.output_text.delta') beside.push(...event.logprobs);
  }
  const streamed = await stream.finalResponse();
  assert.deepEqual(beside, scored);
  const text = (r: OpenAI.Responses.Response) =>
    (r.output[0] as OpenAI.Responses.ResponseOutputMessage)
      .content[0] as OpenAI.Responses.ResponseOutputText;
  assert.deepEqual(text(streamed).logprobs, scored);
  assert.deepEqual(text(await front.client.responses.create(asked)).logprobs, scored);
  const sent = vllm.bodies.at(-1) as Record<string, unknown>;
  assert.deepEqual([sent.logprobs, sent.top_logprobs], [true, 1], 'asked upstream as chat asks');
});

test('what needs a stored conversation, a built-in tool, a file, or a picture no one sized is a 400 naming the field, counted', async () => {
  const front = await gateway([await fakeVllm()]);
  const refused: [Record<string, unknown>, RegExp][] = [
    [
      { previous_response_id: 'resp_1' },
      /^previous_response_id: no response "resp_1" is stored for this tenant/,
    ],
    [{ conversation: 'conv_1' }, /^conversation: not supported: conversations are not stored/],
    [
      { tools: [{ type: 'web_search' }] },
      /^tools\[0\]\.type: expected "function" \(built-in tools are not served\), got "web_search"$/,
    ],
    [
      {
        input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://x/y.png' }] }],
      },
      /^input\[0\]\.content\[0\]: an image, which this gateway cannot size: it was not started with --image-tokens/,
    ],
    [
      { input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file_1' }] }] },
      /^input\[0\]\.content\[0\]\.type: expected a text part .* or an image \(input_image\); files and audio are not modelled, got "input_file"$/,
    ],
    [
      { input: [{ type: 'item_reference', id: 'msg_1' }] },
      /^input\[0\]\.type: expected one of message, function_call, function_call_output, reasoning, got "item_reference"$/,
    ],
    [
      { tool_choice: { type: 'function', name: 'nope' } },
      /^tool_choice\.name: expected the name of one of the tools \("get_weather", "get_time"\), got "nope"$/,
    ],
    [
      { background: true, store: false },
      /^background: expected false or absent with store false: a background response is polled/,
    ],
    [
      { priority: 3 },
      /^priority: expected 0 or absent \(the gateway sets it from the request's class\)/,
    ],
  ];
  for (const [change, message] of refused) {
    const err = await front.client.responses.create({ ...ASKED, ...change } as never).then(
      () => assert.fail(`accepted ${JSON.stringify(change)}`),
      (e: unknown) => e as { status: number; message: string },
    );
    assert.equal(err.status, 400, JSON.stringify(change));
    assert.match(
      err.message,
      new RegExp(message.source.replace(/^\^/, '400 ')),
      JSON.stringify(change),
    );
  }
  const counted = await metricValue(front.url, 'goodput_invalid_requests_total', {
    reason: 'invalid_request',
  });
  assert.equal(counted, refused.length);
});

test('hostile Responses bodies are refused with a short error, and the gateway serves on', async () => {
  const front = await gateway([await fakeVllm()]);
  const hostile = [
    { ...ASKED, tools: Array.from({ length: 300_000 }, () => ({ type: 'x' })) },
    { ...ASKED, input: Array.from({ length: 100_000 }, () => ({ role: 'robot', content: 'x' })) },
    {
      ...ASKED,
      input: Array.from({ length: 2_000 }, () => ({
        role: 'user',
        content: Array.from({ length: 50 }, () => ({ type: 'input_image', image_url: 'x' })),
      })),
    },
  ];
  for (const body of hostile) {
    const r = await fetch(`${front.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await r.text();
    assert.equal(r.status, 400, text.slice(0, 200));
    assert.ok(text.length <= 16 * 1024, `${text.length} bytes of error`);
    assert.ok(r.headers.get('x-goodput-request-id'));
  }
  const served = await front.client.responses.create({ model: MODEL, input: 'still there?' });
  assert.equal(served.status, 'completed');
});

test("a coding agent's turn (Codex's fields) is served, its conversation id keeping it on one backend, on chat too", async () => {
  const [a, b] = [
    await fakeVllm(PIECES, false, 'tool_calls'),
    await fakeVllm(PIECES, false, 'tool_calls'),
  ];
  const policy = policyWith({ routing: { type: 'round-robin', session: { mode: 'hard' } } });
  const front = await gateway([a, b], policy);
  await until(async () => (await metricValue(front.url, 'goodput_backend_ready')) === 2);
  // As a stateless coding agent sends each turn: its thinking's encrypted content asked for,
  // nothing stored, its conversation's id as the cache key.
  const turn = (conversation: string | undefined) => ({
    ...ASKED,
    stream: true as const,
    store: false,
    parallel_tool_calls: false,
    reasoning: { effort: 'medium' as const, summary: 'auto' as const },
    include: ['reasoning.encrypted_content' as const],
    ...(conversation === undefined ? {} : { prompt_cache_key: conversation }),
  });
  for (let i = 0; i < 6; i++) {
    const stream = await front.client.responses.create(turn('conversation-1'));
    let last: OpenAI.Responses.ResponseStreamEvent | undefined;
    for await (const event of stream) last = event;
    assert.equal(last?.type, 'response.completed');
    if (last?.type === 'response.completed') {
      assert.deepEqual(last.response.reasoning, { effort: 'medium', summary: 'auto' });
    }
  }
  const served = [a.bodies.length, b.bodies.length].sort();
  assert.deepEqual(served, [0, 6], 'one conversation, one backend');
  const sent = (a.bodies.length > 0 ? a : b).bodies.at(-1) as Record<string, unknown>;
  assert.deepEqual(sent.chat_template_kwargs, {
    enable_thinking: true,
    reasoning_effort: 'medium',
  });
  assert.equal(sent.parallel_tool_calls, false);
  for (const field of ['include', 'prompt_cache_key', 'reasoning', 'store']) {
    assert.equal(field in sent, false, `${field} stays at the gateway`);
  }
  // Without a conversation id, round-robin spreads the turns.
  for (let i = 0; i < 4; i++) {
    for await (const _ of await front.client.responses.create(turn(undefined))) void _;
  }
  assert.deepEqual([a.bodies.length, b.bodies.length].sort(), [2, 8]);

  // A chat completion's prompt_cache_key is its conversation too, and stays at the gateway.
  const before = [a.bodies.length, b.bodies.length];
  for (let i = 0; i < 4; i++) {
    await front.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'hi' }],
      prompt_cache_key: 'conversation-2',
    });
  }
  const added = [a.bodies.length - before[0], b.bodies.length - before[1]].sort();
  assert.deepEqual(added, [0, 4], 'one chat conversation, one backend');
  const chat = [a, b].find((v) => v.bodies.length > 0 && 'messages' in (v.bodies.at(-1) as object));
  assert.equal('prompt_cache_key' in (chat?.bodies.at(-1) as object), false);
});

test('a backend crash mid-stream ends the Responses stream with response.failed naming it, kept as failed', async () => {
  const front = await gateway(await engines(1, { faults: { crashRate: 1 } }));
  const stream = await front.client.responses.create({
    model: MODEL,
    input: 'crash',
    max_output_tokens: 20,
    ignore_eos: true,
    stream: true,
  } as OpenAI.Responses.ResponseCreateParamsStreaming);
  const types: string[] = [];
  let last: OpenAI.Responses.ResponseStreamEvent | undefined;
  for await (const event of stream) {
    types.push(event.type);
    last = event;
  }
  assert.ok(types.includes('response.output_text.delta'), 'tokens came first');
  assert.equal(last?.type, 'response.failed');
  if (last?.type === 'response.failed') {
    assert.equal(last.response.status, 'failed');
    assert.deepEqual(last.response.error, {
      code: 'upstream_error',
      message: 'the upstream failed mid-stream',
    });
  }
  assert.equal(types.includes('response.completed'), false);
  if (last?.type !== 'response.failed') return;
  // Kept as it ended, and not continued.
  const kept = await front.client.responses.retrieve(last.response.id);
  assert.deepEqual([kept.status, kept.error?.code], ['failed', 'upstream_error']);
  await assert.rejects(
    front.client.responses.create({ model: MODEL, input: 'x', previous_response_id: kept.id }),
    /400 previous_response_id: response ".*" failed; continue from the turn before it/,
  );
});

test('SIGTERM past the drain time cuts a Responses stream with response.failed, then exit 0', async () => {
  const fleet = await startServe(['--profile', 'const:step_ms=15', '--drain-timeout', '0.5']);
  const client = new OpenAI({ baseURL: `${fleet.url}/v1`, apiKey: 'none', maxRetries: 0 });
  const stream = await client.responses.create({
    model: MODEL,
    input: 'A long answer, please.',
    max_output_tokens: 700,
    ignore_eos: true,
    stream: true,
  } as OpenAI.Responses.ResponseCreateParamsStreaming);
  let deltas = 0;
  let last: OpenAI.Responses.ResponseStreamEvent | undefined;
  for await (const event of stream) {
    if (event.type === 'response.output_text.delta' && ++deltas === 1) {
      fleet.proc.child.kill('SIGTERM');
    }
    last = event;
  }
  assert.ok(deltas > 0 && deltas < 700, `cut mid-way: ${deltas} deltas`);
  assert.equal(last?.type, 'response.failed');
  if (last?.type === 'response.failed') {
    assert.equal(last.response.error?.code, 'shutting_down');
  }
  assert.deepEqual(await fleet.proc.exited, { code: 0, signal: null }, fleet.proc.output());
});

test('a burst of 300 Responses streams: each completed or refused with a retry time, every one counted', async () => {
  // Four sequences at a time, a second each: most of the burst cannot start within its TTFT.
  const small = { maxNumSeqs: 4 };
  const front = await gateway(
    await engines(1, { profile: 'const:step_ms=20', ...small }),
    'goodput',
    {
      engine: small,
    },
  );
  const BURST = 300;
  const answers = await Promise.all(
    Array.from({ length: BURST }, () =>
      fetch(`${front.url}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: MODEL,
          input: 'hi',
          max_output_tokens: 50,
          ignore_eos: true,
          stream: true,
        }),
      }).then(async (r) => ({
        status: r.status,
        retry: r.headers.get('retry-after'),
        body: await r.text(),
      })),
    ),
  );
  let served = 0;
  for (const a of answers) {
    if (a.status === 200) {
      served++;
      assert.match(
        a.body,
        /event: response\.(completed|incomplete)\n[^\n]+\n\n$/,
        'ran to its end',
      );
    } else {
      assert.ok([429, 503].includes(a.status), `${a.status} ${a.body.slice(0, 200)}`);
      assert.ok(a.retry !== null, 'a retry time');
      assert.ok((JSON.parse(a.body) as { error?: unknown }).error, 'an OpenAI error');
    }
  }
  assert.ok(served > 0 && served < BURST, `some served, the rest refused: ${served}`);
  assert.equal(
    await metricValue(front.url, 'goodput_api_requests_total', { endpoint: 'responses' }),
    BURST,
  );
  // Each answer counted by the status its client got, as the client counts them.
  const byStatus = new Map<number, number>();
  for (const a of answers) byStatus.set(a.status, (byStatus.get(a.status) ?? 0) + 1);
  for (const [status, n] of byStatus) {
    const counted = await metricValue(front.url, 'goodput_api_answers_total', {
      endpoint: 'responses',
      status: String(status),
    });
    assert.equal(counted, n, `status ${status}`);
  }
});
