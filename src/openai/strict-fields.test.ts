// Nothing a client sends is silently ignored: unknown fields are refused, known but unsupported
// fields pass only with their neutral values, and what parses is what goes upstream.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseChatCompletionRequest, reasoningEffortOf } from './chat-request.ts';
import { parseCompletionRequest } from './completion-request.ts';
import { unsupportedFields, unsupportedMessageFields } from './unsupported-fields.ts';
import { parseJsonText } from './validation.ts';
import { continuousUsage } from './request-fields.ts';
import { rejection } from './openai-test-kit.ts';

const CHAT = { model: 'm', messages: [{ role: 'user', content: 'x' }] };
const TEXT = { model: 'm', prompt: 'x' };
const parsers: [string, (body: unknown) => unknown, Record<string, unknown>][] = [
  ['chat', parseChatCompletionRequest, CHAT],
  ['text', parseCompletionRequest, TEXT],
];

test('an unknown field is a 400 naming it, at any level', () => {
  const cases: [unknown, string, string][] = [
    [{ ...CHAT, x: 1 }, 'x: unknown field', 'x'],
    [{ ...CHAT, x: 1, y: 2 }, 'x: unknown field; y: unknown field', 'x'],
    [
      { ...CHAT, messages: [{ role: 'user', content: 'x', foo: 'bar' }] },
      'messages[0].foo: unknown field',
      'messages[0].foo',
    ],
    [
      { ...CHAT, stream: true, stream_options: { include_usage: true, extra: true } },
      'stream_options.extra: unknown field',
      'stream_options.extra',
    ],
  ];
  for (const [body, message, param] of cases) {
    const err = rejection(() => parseChatCompletionRequest(body));
    assert.equal(err.status, 400);
    assert.equal(err.message, message);
    assert.equal(err.param, param);
  }
  assert.equal(
    rejection(() => parseCompletionRequest({ ...TEXT, regex: 'a+' })).message,
    'regex: unknown field',
  );
});

test('a __proto__ key is an unknown field and never reaches a prototype', () => {
  const cases: [string, string][] = [
    [
      '{"model":"m","messages":[{"role":"user","content":"x"}],"__proto__":{"polluted":1}}',
      '__proto__: unknown field',
    ],
    [
      '{"model":"m","messages":[{"role":"user","content":"x","__proto__":{"polluted":1}}]}',
      'messages[0].__proto__: unknown field',
    ],
    [
      '{"model":"m","messages":[{"role":"user","content":"x"}],"logit_bias":{"__proto__":{}}}',
      'logit_bias: expected keys that are token ids (integers in [0, 1679615]), got the key "__proto__"',
    ],
  ];
  for (const [text, message] of cases) {
    assert.equal(rejection(() => parseChatCompletionRequest(parseJsonText(text))).message, message);
  }
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

// [field, a value that asks for something, its neutral values, what the message expects]
const unsupported: [string, unknown, unknown[], string][] = [
  ['echo', true, [false], 'false or absent'],
  ['best_of', 2, [1], '1 or absent'],
  ['suffix', 'end', [], 'absent'],
  ['functions', [{ name: 'f' }], [[]], '[] or absent'],
  ['function_call', 'auto', ['none'], '"none" or absent'],
  ['store', true, [false], 'false or absent'],
  ['metadata', { k: 'v' }, [{}], '{} or absent'],
  ['modalities', ['text', 'audio'], [['text']], '["text"] or absent'],
  ['audio', { voice: 'alloy', format: 'mp3' }, [], 'absent'],
  ['prediction', { type: 'content', content: 'x' }, [], 'absent'],
  ['reasoning_effort', 'high', [], 'absent'],
  ['web_search_options', {}, [], 'absent'],
  ['use_beam_search', true, [false], 'false or absent'],
  ['prompt_logprobs', 1, [], 'absent'],
  ['verbosity', 'low', ['medium'], '"medium" or absent'],
  ['prompt_cache_retention', '24h', ['in_memory'], '"in_memory" or absent'],
  ['kv_transfer_params', { do_remote_decode: true }, [], 'absent'],
  ['return_tokens_as_token_ids', true, [false], 'false or absent'],
  ['return_token_ids', true, [false], 'false or absent'],
  ['chat_template', '{{ messages }}', [], 'absent'],
  ['mm_processor_kwargs', { fps: 2 }, [{}], '{} or absent'],
  ['documents', [{ title: 'a', text: 'b' }], [], 'absent'],
  ['vllm_xargs', { plugin: 1 }, [{}], '{} or absent'],
];

test("a text completion's echo is a flag, served; chat's is not", () => {
  for (const echo of [true, false, null]) {
    assert.equal(parseCompletionRequest({ ...TEXT, echo }).echo, echo);
  }
  const err = rejection(() => parseCompletionRequest({ ...TEXT, echo: 'yes' }));
  assert.equal(err.message, 'echo: expected a boolean, got "yes"');
});

test("a chat's reasoning effort is vLLM's low, medium or high, served; a text completion's is not", () => {
  for (const reasoning_effort of ['low', 'medium', 'high', null] as const) {
    const parsed = parseChatCompletionRequest({
      ...CHAT,
      reasoning_effort,
      include_reasoning: false,
    });
    assert.equal(parsed.reasoning_effort, reasoning_effort);
    assert.equal(parsed.include_reasoning, false);
  }
  const err = rejection(() => parseChatCompletionRequest({ ...CHAT, reasoning_effort: 'max' }));
  assert.equal(err.message, 'reasoning_effort: expected one of low, medium, high, got "max"');
  assert.equal(err.param, 'reasoning_effort');
  const text = rejection(() => parseCompletionRequest({ ...TEXT, reasoning_effort: 'low' }));
  assert.equal(text.param, 'reasoning_effort');
  // What admission learns lengths at: the field, or the effort the chat template is given.
  const asked = (extra: object) =>
    reasoningEffortOf(parseChatCompletionRequest({ ...CHAT, ...extra }));
  assert.equal(asked({ reasoning_effort: 'high' }), 'high');
  assert.equal(asked({ chat_template_kwargs: { reasoning_effort: 'low' } }), 'low');
  assert.equal(asked({ chat_template_kwargs: { reasoning_effort: 'none' } }), undefined);
  assert.equal(asked({}), undefined);
});

test('logit_bias is token ids to biases in [-100, 100], kept as sent; the first bad one named', () => {
  for (const [, parse, base] of parsers) {
    const logit_bias = { '0': -100, '50256': 5.5, '1679615': 100 };
    assert.deepEqual(
      (parse({ ...base, logit_bias }) as { logit_bias: object }).logit_bias,
      logit_bias,
    );
    const bad: [unknown, string, string][] = [
      [
        [1],
        'logit_bias',
        'logit_bias: expected an object of token ids to biases (a token id (an integer in [0, 1679615]) to a number in [-100, 100]), got [1]',
      ],
      [{ '7': 101 }, 'logit_bias.7', 'logit_bias.7: expected a number in [-100, 100], got 101'],
      [{ '7': '1' }, 'logit_bias.7', 'logit_bias.7: expected a number in [-100, 100], got "1"'],
      [
        { '1679616': 1 },
        'logit_bias',
        'logit_bias: expected keys that are token ids (integers in [0, 1679615]), got the key "1679616"',
      ],
      [
        { '07': 1, x: 'y' },
        'logit_bias',
        'logit_bias: expected keys that are token ids (integers in [0, 1679615]), got the key "07"',
      ],
    ];
    for (const [value, param, message] of bad) {
      const err = rejection(() => parse({ ...base, logit_bias: value }));
      assert.equal(err.message, message);
      assert.equal(err.param, param);
    }
  }
});

test('the table of unsupported fields is the one tested here', () => {
  assert.deepEqual(
    Object.keys(unsupportedFields).sort(),
    unsupported.map(([field]) => field).sort(),
  );
});

test('an unsupported field is a 400 unless it carries a neutral value, which is kept', () => {
  for (const [kind, parse, base] of parsers) {
    for (const [field, asks, neutrals, expected] of unsupported) {
      if (kind === 'text' && field === 'echo') continue; // a text completion's is served
      if (kind === 'chat' && field === 'reasoning_effort') continue; // a chat's is served
      const err = rejection(() => parse({ ...base, [field]: asks }));
      const shown = JSON.stringify(asks);
      assert.equal(
        err.message,
        `${field}: not supported by this server (expected ${expected}), got ${shown}`,
        kind,
      );
      assert.equal(err.param, field);
      for (const neutral of [...neutrals, null]) {
        const parsed = parse({ ...base, [field]: neutral }) as Record<string, unknown>;
        assert.deepEqual(parsed[field], neutral, `${kind} ${field}`);
      }
    }
  }
});

test('stream_options.continuous_usage_stats (vLLM: usage on every chunk) is a flag, kept as sent', () => {
  for (const [kind, parse, base] of parsers) {
    const ask = (value: unknown, include_usage: unknown = true) => ({
      ...base,
      stream: true,
      stream_options: { include_usage, continuous_usage_stats: value },
    });
    for (const value of [true, false, null]) {
      const parsed = parse(ask(value)) as { stream_options: Record<string, unknown> };
      assert.equal(parsed.stream_options.continuous_usage_stats, value, kind);
      assert.equal(continuousUsage(parsed), value === true, kind);
    }
    // As vLLM takes it: only beside include_usage.
    assert.equal(continuousUsage(parse(ask(true, false)) as object), false, kind);
    // OpenAI's obfuscation padding is not done here: asked off, it passes; asked on, it is named.
    const padded = (include_obfuscation: boolean) => ({
      ...base,
      stream: true,
      stream_options: { include_obfuscation },
    });
    assert.deepEqual((parse(padded(false)) as { stream_options: object }).stream_options, {
      include_obfuscation: false,
    });
    assert.equal(rejection(() => parse(padded(true))).param, 'stream_options.include_obfuscation');
    const err = rejection(() => parse(ask('yes')));
    assert.equal(
      err.message,
      'stream_options.continuous_usage_stats: expected a boolean, got "yes"',
    );
    assert.equal(err.param, 'stream_options.continuous_usage_stats');
  }
});

test("a response's message appended to the history passes with its neutral fields", () => {
  assert.deepEqual(Object.keys(unsupportedMessageFields).sort(), [
    'annotations',
    'audio',
    'function_call',
    'reasoning_content',
    'refusal',
  ]);
  const echoed = {
    role: 'assistant',
    content: 'hi',
    refusal: null,
    annotations: [],
    audio: null,
    function_call: null,
    tool_calls: [],
    reasoning_content: null,
  };
  const req = parseChatCompletionRequest({ ...CHAT, messages: [...CHAT.messages, echoed] });
  assert.deepEqual(req.messages[1], echoed);
  const err = rejection(() =>
    parseChatCompletionRequest({ ...CHAT, messages: [{ ...echoed, refusal: 'no' }] }),
  );
  assert.match(err.message, /^messages\[0\]\.refusal: not supported by this server \(expected/);
  assert.equal(err.param, 'messages[0].refusal');
});

test('the parsed request holds every accepted field and only those, in the schema order', () => {
  const full = {
    model: 'm',
    messages: [
      { role: 'system', content: 's', name: 'n' },
      { role: 'user', content: [{ type: 'text', text: 't' }] },
      { role: 'tool', content: 'r', tool_call_id: 'c' },
    ],
    max_tokens: 5,
    max_completion_tokens: 4,
    stream: true,
    stream_options: { include_usage: true, continuous_usage_stats: false },
    temperature: 0.5,
    top_p: 0.9,
    presence_penalty: 0,
    frequency_penalty: null,
    n: 1,
    stop: 'x',
    seed: 1,
    user: 'u',
    safety_identifier: 'user-7f3a',
    ignore_eos: false,
    top_k: 40,
    min_p: 0.1,
    repetition_penalty: 1.2,
    min_tokens: 1,
    logprobs: false,
    tools: [],
    response_format: { type: 'text' },
  };
  const parsed = parseChatCompletionRequest(full);
  assert.deepEqual(parsed, full);
  // Keys come out in the schema's order, whatever order they came in, so JSON.stringify of the
  // parsed request is the same for the same request.
  const reversed = Object.fromEntries(Object.entries(full).reverse());
  assert.equal(JSON.stringify(parseChatCompletionRequest(reversed)), JSON.stringify(parsed));
  assert.deepEqual(JSON.parse(JSON.stringify(parsed)), full);
});
