import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseChatCompletionRequest, reasoningEffortOf } from './chat-request.ts';
import { MAX_INPUT_ITEMS, chatMessages, conversationItems, listedItem } from './response-items.ts';
import { asChatRequest, parseResponsesRequest, statelessOnly } from './responses-request.ts';

/** The chat request as it goes upstream (as JSON), which chat's own schema takes as it is. */
function chat(body: Record<string, unknown>): Record<string, unknown> {
  const built = JSON.stringify(asChatRequest(parseResponsesRequest({ model: 'm', ...body })));
  const json = JSON.parse(built) as Record<string, unknown>;
  const asChat = JSON.parse(JSON.stringify(parseChatCompletionRequest(json))) as unknown;
  assert.deepEqual(asChat, json, 'a chat request as built');
  return json;
}

function refused(body: Record<string, unknown>, message: RegExp): void {
  assert.throws(
    () => parseResponsesRequest({ model: 'm', input: 'x', ...body }),
    (e: Error) => {
      assert.match(e.message, message);
      return true;
    },
  );
}

test('a Responses request is the chat completion it reads as', () => {
  assert.deepEqual(chat({ input: 'hi', instructions: 'Be brief.', max_output_tokens: 7 }), {
    model: 'm',
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
    ],
    max_tokens: 7,
  });
  const c = chat({
    input: [
      { role: 'developer', content: [{ type: 'input_text', text: 'Rules.' }] },
      { type: 'message', role: 'user', content: 'Go.' },
      {
        type: 'reasoning',
        id: 'rs_1',
        summary: [],
        content: [{ type: 'reasoning_text', text: 'x' }],
      },
      {
        type: 'message',
        id: 'msg_1',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'On it.', annotations: [], parsed: null }],
      },
      { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}', parsed_arguments: {} },
      { type: 'function_call_output', call_id: 'c1', output: 'done' },
      { type: 'function_call', call_id: 'c2', name: 'f', arguments: '{"a":1}' },
    ],
    tools: [{ type: 'function', name: 'f', parameters: { type: 'object' } }],
    tool_choice: { type: 'function', name: 'f' },
    parallel_tool_calls: false,
    temperature: 0.5,
  });
  assert.deepEqual(c.messages, [
    { role: 'developer', content: [{ type: 'text', text: 'Rules.' }] },
    { role: 'user', content: 'Go.' },
    {
      role: 'assistant',
      content: [{ type: 'text', text: 'On it.' }],
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
    },
    { role: 'tool', tool_call_id: 'c1', content: 'done' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c2', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
    },
  ]);
  assert.deepEqual(c.tools, [
    { type: 'function', function: { name: 'f', parameters: { type: 'object' } } },
  ]);
  assert.deepEqual(c.tool_choice, { type: 'function', function: { name: 'f' } });
  assert.deepEqual([c.parallel_tool_calls, c.temperature], [false, 0.5]);
});

test("the reply's form goes as chat's response_format", () => {
  const schema = { type: 'object', properties: { a: { type: 'string' } } };
  assert.deepEqual(
    chat({ input: 'x', text: { format: { type: 'json_schema', name: 's', schema, strict: true } } })
      .response_format,
    { type: 'json_schema', json_schema: { name: 's', schema, strict: true } },
  );
  assert.deepEqual(
    chat({ input: 'x', text: { format: { type: 'json_object' } } }).response_format,
    {
      type: 'json_object',
    },
  );
  assert.equal(chat({ input: 'x', text: { format: { type: 'text' } } }).response_format, undefined);
});

test("vLLM's own fields go as chat takes them, with its rules", () => {
  const extras = {
    top_k: 20,
    repetition_penalty: 1.1,
    seed: 7,
    stop: ['END'],
    ignore_eos: true,
    skip_special_tokens: false,
    include_stop_str_in_output: true,
    cache_salt: 'tenant-a',
    priority: -1,
    structured_outputs: { choice: ['yes', 'no'] },
  };
  const c = chat({ input: 'x', ...extras });
  for (const [field, value] of Object.entries(extras)) assert.deepEqual(c[field], value, field);
  refused(
    { text: { format: { type: 'json_object' } }, structured_outputs: { regex: 'a+' } },
    /^structured_outputs: expected absent beside text\.format json_object \(one constraint per reply\)/,
  );
  refused(
    {
      tools: [{ type: 'function', name: 'f' }],
      tool_choice: 'required',
      structured_outputs: { regex: 'a+' },
    },
    /^tool_choice: expected "none", "auto" or absent beside structured_outputs/,
  );
  refused({ top_k: -2 }, /^top_k: expected an integer ≥ -1, got -2$/);
});

test('the effort admission learns reply lengths at is the one the chat template is given', () => {
  const learnedAt = (reasoning?: object) =>
    reasoningEffortOf(asChatRequest(parseResponsesRequest({ model: 'm', input: 'x', reasoning })));
  assert.equal(learnedAt({ effort: 'high' }), 'high');
  assert.equal(learnedAt({ effort: 'minimal' }), 'low');
  assert.equal(learnedAt({ effort: 'none' }), undefined);
  assert.equal(learnedAt(), undefined);
});

test("an agent's reasoning effort goes to the chat template as vLLM passes it", () => {
  const kwargs = (effort: string) =>
    chat({ input: 'x', reasoning: { effort, summary: 'auto' } }).chat_template_kwargs;
  assert.deepEqual(kwargs('none'), { enable_thinking: false, reasoning_effort: 'none' });
  assert.deepEqual(kwargs('minimal'), { enable_thinking: true, reasoning_effort: 'low' });
  assert.deepEqual(kwargs('high'), { enable_thinking: true, reasoning_effort: 'high' });
  assert.equal(
    chat({ input: 'x', reasoning: { summary: 'auto' } }).chat_template_kwargs,
    undefined,
  );
  // What a stateless agent asks for, and its conversation's id: neither goes upstream.
  const asked = chat({
    input: 'x',
    include: ['reasoning.encrypted_content'],
    prompt_cache_key: 'c1',
  });
  assert.deepEqual(Object.keys(asked).sort(), ['messages', 'model']);
  refused(
    { reasoning: { effort: 'max' } },
    /^reasoning\.effort: expected one of none, minimal, low, medium, high, got "max"$/,
  );
  refused(
    { include: ['file_search_call.results'] },
    /^include\[0\]: expected message\.output_text\.logprobs or reasoning\.encrypted_content \(the ones served\), got "file_search_call\.results"$/,
  );
  refused(
    { prompt_cache_key: '' },
    /^prompt_cache_key: expected a string of 1 to 255 characters, got ""$/,
  );
  refused(
    { prompt_cache_key: 'k'.repeat(256) },
    /^prompt_cache_key: expected a string of 1 to 255 characters/,
  );
});

test("the reply's log probabilities, asked with include, go as chat asks them", () => {
  const logprobs = ['message.output_text.logprobs'];
  const c = chat({ input: 'x', include: logprobs, top_logprobs: 3 });
  assert.deepEqual([c.logprobs, c.top_logprobs], [true, 3]);
  assert.deepEqual([chat({ input: 'x', include: logprobs }).top_logprobs], [0]);
  assert.equal(chat({ input: 'x', top_logprobs: 0 }).logprobs, undefined);
  refused(
    { top_logprobs: 2 },
    /^top_logprobs: only allowed when include has message\.output_text\.logprobs$/,
  );
  refused(
    { include: logprobs, top_logprobs: 21 },
    /^top_logprobs: expected an integer in \[0, 20\], got 21$/,
  );
});

test('a bad field is a 400 naming it, with its value', () => {
  refused({ input: 7 }, /^input: expected a string or a non-empty array of input items, got 7$/);
  refused({ input: [{ role: 'tool', content: 'x' }] }, /^input\[0\]\.role: expected one of user/);
  refused(
    { input: [{ type: 'function_call', call_id: '', name: 'f', arguments: '{}' }] },
    /^input\[0\]\.call_id: expected a non-empty string, got ""$/,
  );
  refused({ input: [{ role: 'user', content: [] }] }, /^input\[0\]\.content: expected a string or/);
  refused({ tool_choice: 'required' }, /^tool_choice: expected "none" or absent when no tools/);
  refused(
    {
      tools: [{ type: 'function', name: 'f' }],
      tool_choice: 'required',
      text: { format: { type: 'json_object' } },
    },
    /^tool_choice: expected "none", "auto" or absent beside text\.format json_object/,
  );
  refused({ text: { format: { type: 'json_schema', schema: {} } } }, /^text\.format\.name: /);
  refused(
    { truncation: 'middle' },
    /^truncation: expected auto or disabled \(the default\), got "middle"/,
  );
  refused({ conversation: 'conv_1' }, /^conversation: not supported: conversations are not stored/);
  for (const id of ['', 'r'.repeat(257)]) {
    refused(
      { previous_response_id: id },
      /^previous_response_id: expected a response id of 1 to 256 /,
    );
  }
  refused({ max_output_tokens: 0 }, /^max_output_tokens: expected an integer in \[1, /);
  // The Responses API's stream options have no usage switch; its obfuscation is not done here.
  refused(
    { stream_options: { include_usage: true } },
    /^stream_options\.include_usage: unknown field$/,
  );
  refused(
    { stream_options: { include_obfuscation: true } },
    /^stream_options\.include_obfuscation: not supported by this server \(expected false or absent\)/,
  );
  refused(
    { prompt_cache_retention: '24h' },
    /^prompt_cache_retention: not supported by this server/,
  );
});

test("metadata within OpenAI's limits: 16 pairs, keys of 64 characters, values of 512", () => {
  const pairs = (n: number) =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
  assert.equal(
    Object.keys(
      parseResponsesRequest({ model: 'm', input: 'x', metadata: pairs(16) }).metadata ?? {},
    ).length,
    16,
  );
  refused(
    { metadata: pairs(200_000) },
    /^metadata: expected at most 16 key-value pairs, got 200000$/,
  );
  refused(
    { metadata: { ['k'.repeat(65)]: 'v' } },
    /^metadata: expected keys of at most 64 characters, got "k{65}" \(65\)$/,
  );
  refused(
    { metadata: { k: 'v'.repeat(513) } },
    /^metadata\.k: expected a string of at most 512 characters/,
  );
  refused(
    { metadata: { k: 1 } },
    /^metadata\.k: expected a string of at most 512 characters, got 1$/,
  );
  refused({ metadata: ['v'] }, /^metadata: expected an object of strings/);
});

test('a __proto__ key in a free-form object is refused by name, not dropped on the way upstream', () => {
  const proto = JSON.parse('{"__proto__":{"enable_thinking":false},"x":1}') as Record<
    string,
    unknown
  >;
  refused(
    { metadata: JSON.parse('{"__proto__":"x","a":"b"}') as object },
    /^metadata\.__proto__: expected a key other than __proto__/,
  );
  refused(
    { tools: [{ type: 'function', name: 'f', parameters: proto }] },
    /^tools\[0\]\.parameters\.__proto__: expected a key other than __proto__/,
  );
  assert.throws(
    () =>
      parseChatCompletionRequest({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
        chat_template_kwargs: proto,
      }),
    /^OpenAiError: chat_template_kwargs\.__proto__: expected a key other than __proto__ \(it would be lost on the way upstream\)$/,
  );
  // Deeper in, it is an own key like any other, and goes as it came.
  const deep = { type: 'object', properties: proto };
  const built = chat({ input: 'x', tools: [{ type: 'function', name: 'f', parameters: deep }] });
  assert.match(
    JSON.stringify(built),
    /"properties":\{"__proto__":\{"enable_thinking":false\},"x":1\}/,
  );
});

test('a long input is refused before it is judged, and bad items are judged to the first', () => {
  const many = Array.from({ length: MAX_INPUT_ITEMS + 1 }, () => ({ role: 'user', content: 'x' }));
  refused({ input: many }, new RegExp(`^input: expected at most ${MAX_INPUT_ITEMS} items, got`));
  const bad = Array.from({ length: MAX_INPUT_ITEMS }, () => ({ role: 'user', content: 1 }));
  assert.throws(
    () => parseResponsesRequest({ model: 'm', input: bad }),
    (e: Error) => /^input\[0\]\.content: [^;]*$/.test(e.message),
  );
});

test("a conversation's items as a stored response keeps them: typed, with ids, read by chat as they came", () => {
  const items = [
    { role: 'user', content: 'Weather in Oslo?' },
    { type: 'message', role: 'assistant', content: 'Checking.', id: 'msg_mine' },
    { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{}' },
    { type: 'function_call_output', call_id: 'c1', output: 'rain' },
  ];
  const input = parseResponsesRequest({ model: 'm', input: items }).input;
  const kept = conversationItems(input, 'r1');
  assert.deepEqual(kept, [
    { type: 'message', id: 'msg_r1_in0', role: 'user', content: 'Weather in Oslo?' },
    { type: 'message', id: 'msg_mine', role: 'assistant', content: 'Checking.' },
    { type: 'function_call', id: 'fc_r1_in2', call_id: 'c1', name: 'get_weather', arguments: '{}' },
    { type: 'function_call_output', id: 'fco_r1_in3', call_id: 'c1', output: 'rain' },
  ]);
  assert.deepEqual(
    chatMessages(null, kept),
    chatMessages(null, input),
    'chat reads them as they came',
  );
  assert.deepEqual(conversationItems('hi', 'r2'), [
    { type: 'message', id: 'msg_r2_in0', role: 'user', content: 'hi' },
  ]);
  // Listed, a message's text is its one part.
  assert.deepEqual(kept.map(listedItem).slice(0, 2), [
    { ...kept[0], content: [{ type: 'input_text', text: 'Weather in Oslo?' }] },
    { ...kept[1], content: [{ type: 'output_text', text: 'Checking.', annotations: [] }] },
  ]);
  assert.equal(listedItem(kept[2]), kept[2]);
});

test('a server without a store refuses a request that follows a stored response, by name', () => {
  const follows = parseResponsesRequest({ model: 'm', input: 'x', previous_response_id: 'resp_1' });
  assert.throws(
    () => statelessOnly(follows, 'this server'),
    /^OpenAiError: previous_response_id: not supported: this server stores no responses; send the whole conversation in input, got "resp_1"$/,
  );
  statelessOnly(parseResponsesRequest({ model: 'm', input: 'x' }), 'this server');
});
