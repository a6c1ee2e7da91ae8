// An agent's tool calls through `goodput serve`, as the official `openai` client sends and reads
// them: tools offered go to a vLLM as sent; the calls its parser streams reach the client, piece
// by piece or whole (`message.tool_calls`, content null, finish `tool_calls`), forwarded as they
// came or rebuilt; the agent's next turn (its call and the tool's answer in the history) is
// served; the simulated engines answer a call required with one, their words its arguments.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { estimateChatTokens, parseChatCompletionRequest } from '../../src/openai/index.ts';
import { streamCall } from '../../src/loadgen/stream-call.ts';
import { wallClock } from '../../src/runtime/wall-clock.ts';
import { wallTimers } from '../../src/runtime/wall-timers.ts';
import { MODEL, engines, gateway } from './gateway-kit.ts';
import { startServe } from './process-kit.ts';
import { fakeVllm } from './fake-vllm.ts';

const WEATHER: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const TIME: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: { name: 'get_time', parameters: { type: 'object', properties: {} } },
};
const ASKED = {
  model: MODEL,
  messages: [{ role: 'user' as const, content: 'Weather and time in Oslo?' }],
  tools: [WEATHER, TIME],
  tool_choice: 'auto' as const,
};

/** Two parallel calls as vLLM's tool parsers stream them: each named, then its arguments. */
const PIECES = [
  { tool_calls: [{ index: 0, id: 'call-w', type: 'function', function: { name: 'get_weather' } }] },
  { tool_calls: [{ index: 0, function: { arguments: '{"city": ' } }] },
  { tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] },
  { tool_calls: [{ index: 1, id: 'call-t', type: 'function', function: { name: 'get_time' } }] },
  { tool_calls: [{ index: 1, function: { arguments: '{}' } }] },
];
const CALLS = [
  {
    id: 'call-w',
    type: 'function',
    function: { name: 'get_weather', arguments: '{"city": "Oslo"}' },
  },
  { id: 'call-t', type: 'function', function: { name: 'get_time', arguments: '{}' } },
];

test("a vLLM's tool calls reach the client streamed and whole, forwarded as they came or rebuilt", async () => {
  for (const foreign of [false, true]) {
    const how = foreign ? 'rebuilt' : 'forwarded';
    const vllm = await fakeVllm(PIECES, foreign, 'tool_calls');
    const front = await gateway([vllm]);
    // The client's own helper gathers the pieces into whole calls.
    const stream = front.client.chat.completions.stream({
      ...ASKED,
      stream_options: { include_usage: true },
    });
    let pieces = 0;
    for await (const chunk of stream) if (chunk.choices[0]?.delta?.tool_calls) pieces++;
    const streamed = await stream.finalChatCompletion();
    assert.equal(pieces, PIECES.length, how);
    assert.deepEqual(streamed.choices[0].message.tool_calls, CALLS, how);
    assert.equal(streamed.choices[0].finish_reason, 'tool_calls', how);
    assert.equal(streamed.usage?.completion_tokens, PIECES.length, `${how}: each piece counted`);

    const whole = await front.client.chat.completions.create(ASKED);
    assert.deepEqual(whole.choices[0].message.tool_calls, CALLS, how);
    assert.equal(whole.choices[0].message.content, null, `${how}: it said nothing else`);
    assert.equal(whole.choices[0].finish_reason, 'tool_calls', how);
    const sent = vllm.bodies.at(-1) as { tools: unknown; tool_choice: unknown };
    assert.deepEqual([sent.tools, sent.tool_choice], [ASKED.tools, 'auto'], 'the tools as sent');
  }
});

test("goodput bench's client times an agent's first token at its first call", async () => {
  const vllm = await fakeVllm(PIECES, false, 'tool_calls');
  const record = await streamCall(
    { baseUrl: vllm.url, clock: wallClock, timers: wallTimers(), timeoutMs: 5_000 },
    { id: 'r1', tenant: 'default', sloClass: 'interactive', dueMs: 0, promptTokens: 40 },
    {
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...ASKED, stream: true }),
    },
  );
  assert.equal(record.ok, true);
  assert.equal(record.tokenTimesMs.length, PIECES.length, 'every piece is a token');
});

/** The agent's next turn: its call and the tools' answers in the history. */
const NEXT_TURN = {
  ...ASKED,
  messages: [
    ...ASKED.messages,
    { role: 'assistant' as const, content: null, tool_calls: CALLS },
    { role: 'tool' as const, content: '{"rain": true}', tool_call_id: 'call-w' },
    { role: 'tool' as const, content: '"14:05"', tool_call_id: 'call-t' },
  ],
  max_tokens: 4,
} as OpenAI.ChatCompletionCreateParamsNonStreaming;

test("a simulated engine serves an agent's next turn, its tools and calls counted as prompt", async () => {
  const [engine] = await engines(1);
  const front = await gateway([engine]);
  const r = await front.client.chat.completions.create(NEXT_TURN);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.choices[0].message.tool_calls, undefined, 'its filler calls nothing');
  const counted = estimateChatTokens(parseChatCompletionRequest(NEXT_TURN));
  const bare = estimateChatTokens({ messages: [{ role: 'user', content: 'x' }] });
  assert.equal(r.usage?.prompt_tokens, counted);
  assert.ok(counted > bare + 60, `tools and calls are prompt: ${counted}`);
});

test('a call required of the simulated fleet or engine is answered with one, its words the arguments', async () => {
  const [engine] = await engines(1);
  const fleet = await startServe(['--profile', 'const:step_ms=2']);
  const clients = [
    ['goodput engine behind the gateway', (await gateway([engine])).client],
    [
      'the embedded fleet',
      new OpenAI({ baseURL: `${fleet.url}/v1`, apiKey: 'none', maxRetries: 0 }),
    ],
  ] as const;
  for (const [where, client] of clients) {
    for (const [choice, name] of [
      ['required', 'get_weather'],
      [{ type: 'function', function: { name: 'get_time' } }, 'get_time'],
    ] as const) {
      // Room for the filler's own length: it ends, and the call is closed.
      const asked = { ...ASKED, tool_choice: choice, max_tokens: 4000 };
      const stream = client.chat.completions.stream(asked);
      for await (const _ of stream);
      const streamed = (await stream.finalChatCompletion()).choices[0];
      const whole = (await client.chat.completions.create(asked)).choices[0];
      for (const [how, c] of [
        ['streamed', streamed],
        ['whole', whole],
      ] as const) {
        const at = `${where}, ${how}, ${JSON.stringify(choice)}`;
        const calls = c.message.tool_calls ?? [];
        assert.equal(calls.length, 1, at);
        const call = calls[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
        assert.equal(call.function.name, name, at);
        assert.match(call.id, /^chatcmpl-tool-/, at);
        assert.equal(c.finish_reason, 'tool_calls', at);
        // Gathered by the client, a stream's content is its role chunk's empty one.
        assert.equal(c.message.content, how === 'whole' ? null : '', at);
        const args = JSON.parse(call.function.arguments) as { input: string };
        assert.ok(args.input.split(' ').length > 1, at);
      }
    }
    // Cut at its limit, the call's arguments stay open, as a model's do.
    const cut = await client.chat.completions.create({
      ...ASKED,
      tool_choice: 'required',
      max_tokens: 3,
      ignore_eos: true,
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    assert.equal(cut.choices[0].finish_reason, 'length', where);
    const open = cut.choices[0].message
      .tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    assert.match(open.function.arguments, /^\{"input": "[^"]+$/, where);
  }
});
