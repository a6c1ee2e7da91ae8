// A chat's tools as vLLM takes them: offered, chosen, called and answered in the history; each bad
// value a 400 naming its field; a text completion takes none; what the prompt estimate and the
// prefix hashes make of them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseChatCompletionRequest } from './chat-request.ts';
import { parseCompletionRequest } from './completion-request.ts';
import { rejection } from './openai-test-kit.ts';
import { chatBlockHashes } from './prefix-hashes.ts';
import { estimateChatTokens, leastChatTokens, renderChatPrompt } from './prompt-tokens.ts';
import { ToolCalls } from './chunks.ts';
import { chatCompletion, usage } from './responses.ts';

const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    strict: true,
  },
};
const CALL = {
  id: 'chatcmpl-tool-1',
  type: 'function',
  function: { name: 'get_weather', arguments: '{"city": "Oslo"}' },
};
/** An agent's second turn: the tools, the call the model made, and the tool's answer. */
const AGENT = {
  model: 'm',
  messages: [
    { role: 'user', content: 'Is it raining in Oslo?' },
    { role: 'assistant', content: null, tool_calls: [CALL] },
    { role: 'tool', content: '{"rain": true}', tool_call_id: 'chatcmpl-tool-1' },
  ],
  tools: [WEATHER],
};

test("an agent's turn parses as it was sent: tools, choice, the calls made and their answers", () => {
  for (const tool_choice of [
    undefined,
    'none',
    'auto',
    'required',
    { type: 'function', function: { name: 'get_weather' } },
  ]) {
    const body = { ...AGENT, tool_choice, parallel_tool_calls: false };
    assert.deepEqual(parseChatCompletionRequest(body), body);
  }
  // Offered nothing, a client may still say none.
  const plain = { model: 'm', messages: [{ role: 'user', content: 'x' }], tools: [] };
  assert.deepEqual(parseChatCompletionRequest({ ...plain, tool_choice: 'none' }), {
    ...plain,
    tool_choice: 'none',
  });
});

test('a bad tool field is a 400 naming the field and the value', () => {
  const cases: [object, string, string][] = [
    [{ tools: {} }, 'tools: expected an array of tools, got {}', 'tools'],
    [
      { tools: [{ type: 'retrieval', function: WEATHER.function }] },
      'tools[0].type: expected "function", got "retrieval"',
      'tools[0].type',
    ],
    [
      { tools: [{ type: 'function', function: { name: '' } }] },
      'tools[0].function.name: expected a non-empty string, got ""',
      'tools[0].function.name',
    ],
    [
      { tools: [{ type: 'function', function: { name: 'f', parameters: 'object' } }] },
      'tools[0].function.parameters: expected a JSON schema (an object), got "object"',
      'tools[0].function.parameters',
    ],
    [
      { tools: [{ type: 'function', function: { name: 'f', params: {} } }] },
      'tools[0].function.params: unknown field',
      'tools[0].function.params',
    ],
    [
      { tool_choice: 'any' },
      'tool_choice: expected one of none, auto, required, got "any"',
      'tool_choice',
    ],
    [
      { tool_choice: 3 },
      'tool_choice: expected one of none, auto, required, or {"type": "function", "function": {"name": …}}, got 3',
      'tool_choice',
    ],
    [
      { tool_choice: { type: 'function', function: { name: 'get_time' } } },
      'tool_choice.function.name: expected the name of one of the tools ("get_weather"), got "get_time"',
      'tool_choice.function.name',
    ],
    [
      { tools: null, tool_choice: 'required' },
      'tool_choice: expected "none" or absent when no tools are given, got "required"',
      'tool_choice',
    ],
    [
      { parallel_tool_calls: 'yes' },
      'parallel_tool_calls: expected a boolean, got "yes"',
      'parallel_tool_calls',
    ],
  ];
  for (const [fields, message, param] of cases) {
    const err = rejection(() => parseChatCompletionRequest({ ...AGENT, ...fields }));
    assert.equal(err.message, message);
    assert.equal(err.param, param);
  }
});

test('a call in the history is whole, and made by an assistant', () => {
  const withCall = (role: string, call: object) => ({
    ...AGENT,
    messages: [{ role, content: role === 'assistant' ? null : 'x', tool_calls: [call] }],
  });
  const cases: [object, string][] = [
    [
      withCall('assistant', { ...CALL, function: { name: 'get_weather', arguments: { city: 1 } } }),
      'messages[0].tool_calls[0].function.arguments: expected a string (JSON text), got {"city":1}',
    ],
    [
      withCall('assistant', { ...CALL, id: '' }),
      'messages[0].tool_calls[0].id: expected a non-empty string, got ""',
    ],
    [
      withCall('user', CALL),
      'messages[0].tool_calls: expected absent on a user message (only an assistant calls tools), got [{"id":"chatcmpl-tool-1",…',
    ],
  ];
  for (const [body, message] of cases) {
    const err = rejection(() => parseChatCompletionRequest(body));
    assert.ok(err.message.startsWith(message.replace(/…$/, '')), err.message);
  }
});

test('a text completion offers no tools: only the values that ask for nothing pass', () => {
  const base = { model: 'm', prompt: 'x' };
  assert.equal(
    rejection(() => parseCompletionRequest({ ...base, tools: [WEATHER] })).message.split(',')[0],
    'tools: not supported by this server (expected [] or absent)',
  );
  assert.equal(
    rejection(() => parseCompletionRequest({ ...base, tool_choice: 'auto' })).message,
    'tool_choice: not supported by this server (expected "none" or absent), got "auto"',
  );
  const neutral = { ...base, tools: [], tool_choice: 'none', parallel_tool_calls: true };
  assert.deepEqual(parseCompletionRequest(neutral), neutral);
});

test('tools offered and calls made are prompt: counted, bounded and hashed ahead of the talk', () => {
  const agent = parseChatCompletionRequest(AGENT);
  const bare = { messages: agent.messages.map(({ tool_calls: _, ...m }) => m) };
  const toolsJson = JSON.stringify(agent.tools);
  const callJson = '{"name": "get_weather", "arguments": {"city": "Oslo"}}';
  assert.equal(
    estimateChatTokens(agent),
    estimateChatTokens(bare) + 4 + Math.ceil(toolsJson.length / 4) + Math.ceil(callJson.length / 4),
  );
  assert.ok(leastChatTokens(agent) > leastChatTokens(bare));
  const text = renderChatPrompt(agent);
  assert.ok(text.startsWith(`<|tools|>\n${toolsJson}\n<|user|>`), text);
  assert.ok(text.includes(`<|assistant|>\n${callJson}\n<|tool|>`), text);
  // The tools come first: two requests that offer other tools share no block.
  const other = { ...agent, tools: [{ ...agent.tools![0], function: { name: 'get_time' } }] };
  const [a, b] = [agent, other].map((p) => chatBlockHashes(p, 200, 16).hashes);
  assert.ok(a.length > 3);
  assert.notEqual(a[0], b[0]);
  assert.deepEqual(chatBlockHashes({ ...agent }, 200, 16).hashes, a, 'the same tools: the same');
});

test("a reply's call pieces gather into whole calls, as OpenAI's clients gather them", () => {
  const calls = new ToolCalls();
  assert.equal(calls.whole(), undefined);
  calls.add([{ index: 1, id: 'b', type: 'function', function: { name: 'g', arguments: '' } }]);
  calls.add([{ index: 0, id: 'a', type: 'function', function: { name: 'f' } }]);
  calls.add([
    { index: 0, function: { arguments: '{"x":' } },
    { index: 1, function: {} },
  ]);
  calls.add([{ index: 0, function: { arguments: ' 1}' } }]);
  const whole = calls.whole();
  assert.deepEqual(whole, [
    { id: 'a', type: 'function', function: { name: 'f', arguments: '{"x": 1}' } },
    { id: 'b', type: 'function', function: { name: 'g', arguments: '' } },
  ]);
  const head = { id: 'chatcmpl-1', created: 1, model: 'm' };
  const message = chatCompletion(head, '', 'tool_calls', usage(5, 4), { toolCalls: whole })
    .choices[0].message;
  assert.deepEqual(message, { role: 'assistant', content: null, tool_calls: whole });
  assert.equal(chatCompletion(head, 'ok', 'stop', usage(5, 1)).choices[0].message.content, 'ok');
});
