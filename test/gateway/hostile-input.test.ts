// Hostile and malformed requests against a real gateway in front of real `goodput engine`
// servers, over HTTP, as an attacker would send them: deep nesting, huge strings and headers,
// bytes that are not UTF-8, numbers JSON cannot hold, duplicate and `__proto__` keys, headers out
// of range, uploads abandoned half-way, and all of it at once. Each is refused with the exact
// status and OpenAI's error shape naming what was wrong, carries its request id, and leaves the
// gateway serving: the next normal request is a 200, /readyz is ready and no breaker opened.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { gzipSync } from 'node:zlib';
import { sha256 } from '../../src/gateway/api-keys.ts';
import { memoryOpsLog } from '../../src/gateway/ops-log.ts';
import {
  MODEL,
  aftermath,
  engines,
  gateway,
  metricValue,
  policyWith,
  postChat,
  rawPost as raw,
  until,
  type Answer,
} from './gateway-kit.ts';

const backends = await engines(2);
const log = memoryOpsLog();
const open = await gateway(backends, 'goodput', { log });
const keyed = await gateway(
  backends,
  policyWith({ tenants: { acme: { api_keys_sha256: [sha256('sk-acme').toString('hex')] } } }),
);
const ACME = { authorization: 'Bearer sk-acme' };
const HEALTHY = { chat: 200, readyz: 200, breakersOpen: 0 };

/** A chat body as text: a valid request with `fields` over it (or after it, as written). */
const chat = (fields: Record<string, unknown> = {}) =>
  JSON.stringify({
    model: MODEL,
    messages: [{ role: 'user', content: 'x' }],
    max_tokens: 3,
    ...fields,
  });

/** The reproduction of the worst defect: an unknown field holding 5,000 nested arrays. */
const NESTED =
  `{"model":"${MODEL}","messages":[{"role":"user","content":"x"}],"max_tokens":3,"x":` +
  '['.repeat(5000) +
  ']'.repeat(5000) +
  '}';

interface Refusal {
  readonly status: number;
  readonly code: string | null;
  readonly message: RegExp;
  /** `x-goodput-reason`; null: the gateway sets none for this answer. */
  readonly reason: string | null;
  readonly param?: string | null;
}

const INVALID = 'invalid_request';

function assertRefusal(a: Answer, want: Refusal): void {
  assert.equal(a.status, want.status, a.body.slice(0, 300));
  assert.match(a.header('content-type') ?? '', /application\/json/);
  const body = JSON.parse(a.body) as {
    error: { message: string; type: string; param: string | null; code: string | null };
  };
  assert.deepEqual(Object.keys(body), ['error']);
  assert.equal(typeof body.error.type, 'string');
  assert.match(body.error.message, want.message);
  assert.equal(body.error.code, want.code);
  if (want.param !== undefined) assert.equal(body.error.param, want.param);
  assert.equal(a.header('x-goodput-reason'), want.reason);
  assert.ok(a.header('x-goodput-request-id'), 'names its request');
  assert.equal(a.header('x-request-id'), a.header('x-goodput-request-id'), 'as OpenAI names it');
  if (want.status === 504) assert.equal(a.header('retry-after'), null, 'no retry can succeed');
}

const nestedRefusal: Refusal = {
  status: 400,
  code: 'invalid_value',
  message: /^request body: nesting deeper than 32 levels at x\[0\]/,
  reason: INVALID,
};

for (const [how, gw, headers] of [
  ['without API keys', open, {}],
  ['with API keys', keyed, ACME],
] as const) {
  test(`5,000 nested arrays in an unknown field, ${how}: 400 naming the depth, every backend still in the fleet`, async () => {
    for (let i = 0; i < 3; i++) assertRefusal(await raw(gw.url, NESTED, headers), nestedRefusal);
    const together = await Promise.all([1, 2, 3].map(() => raw(gw.url, NESTED, headers)));
    for (const a of together) assertRefusal(a, nestedRefusal);
    assert.deepEqual(await aftermath(gw.url, headers), HEALTHY);
    // Both backends take requests: none is out of the fleet, nothing is refused for capacity.
    const normal = await Promise.all(
      Array.from({ length: 8 }, () => postChat(gw.url, { max_tokens: 2 }, headers)),
    );
    for (const res of normal) {
      assert.equal(res.status, 200, res.headers.get('x-goodput-reason') ?? '');
      await res.text();
    }
    const closed = { state: 'closed' };
    assert.equal(await metricValue(gw.url, 'goodput_backend_breaker_state', closed), 2);
  });
}

test('with API keys, the nested body without a key is a 401: the body is never read', async () => {
  assertRefusal(await raw(keyed.url, NESTED), {
    status: 401,
    code: 'invalid_api_key',
    message: /API key/,
    reason: 'unauthenticated',
  });
  assert.deepEqual(await aftermath(keyed.url, ACME), HEALTHY);
});

test('with API keys, two Authorization headers are a 401, whichever comes first: neither is taken alone', async () => {
  for (const both of [
    ['Bearer sk-acme', 'Bearer sk-other'],
    ['Bearer sk-other', 'Bearer sk-acme'],
    ['Bearer sk-acme', 'Bearer sk-acme'],
  ]) {
    // Node's client writes an array as one header line per value.
    const a = await raw(keyed.url, chat(), { authorization: both } as never);
    assert.equal(a.status, 401, both.join(' | '));
    assert.equal(a.header('x-goodput-reason'), 'unauthenticated');
  }
  assert.equal((await raw(keyed.url, chat(), ACME)).status, 200, 'one is served');
});

interface Case {
  readonly name: string;
  readonly send: () => Promise<Answer>;
  readonly want: Refusal;
}

const post = (body: string | Buffer, headers: Record<string, string> = {}) =>
  raw(open.url, body, headers);
const bad = (message: RegExp, param?: string | null): Refusal => ({
  status: 400,
  code: 'invalid_value',
  message,
  reason: INVALID,
  param,
});

const INVALID_UTF8 = Buffer.concat([
  Buffer.from(`{"model":"${MODEL}","messages":[{"role":"user","content":"`),
  Buffer.from([0xc3, 0x28, 0xff]),
  Buffer.from('"}],"max_tokens":3}'),
]);
const UTF8_OFFSET = INVALID_UTF8.indexOf(0xc3);

const cases: Case[] = [
  {
    name: 'nesting over the limit inside a known field (messages[0].content)',
    send: () =>
      post(
        `{"model":"${MODEL}","messages":[{"role":"user","content":${'['.repeat(40)}${']'.repeat(40)}}],"max_tokens":3}`,
      ),
    want: bad(/^request body: nesting deeper than 32 levels at messages\[0\]\.content\[0\]\[0\]/),
  },
  {
    name: 'a 3 MB content',
    send: () => post(chat({ messages: [{ role: 'user', content: 'x'.repeat(3_000_000) }] })),
    want: {
      status: 400,
      code: 'context_length_exceeded',
      param: 'messages',
      // At least 23,438 tokens (3 MB, at most 128 bytes a token) against the model's 8,192.
      message:
        /^This model's maximum context length is 8192 tokens: the prompt \(at least 23438 tokens\) exceeds it$/,
      reason: 'context_length',
    },
  },
  {
    name: 'a 100 KB model name',
    send: () => post(chat({ model: 'm'.repeat(100_000) })),
    want: {
      status: 404,
      code: 'model_not_found',
      // Cut short: the message shows 80 characters of the name, not 100 KB.
      message: /^model: expected one of llama-3-8b, got "m{79}… \(the model does not exist\)$/,
      reason: 'unknown_model',
      param: 'model',
    },
  },
  {
    name: 'a header value of 64 KB',
    send: () => post(chat(), { 'x-filler': 'a'.repeat(64 * 1024) }),
    want: {
      status: 431,
      code: 'header_too_large',
      message: /^request headers: expected at most 16 KiB in all, got more$/,
      reason: 'payload_too_large',
    },
  },
  {
    name: 'a 100 KB request target',
    send: () => raw(open.url, chat(), {}, `/v1/chat/completions?q=${'a'.repeat(100_000)}`),
    want: {
      status: 414,
      code: 'uri_too_long',
      message: /^request target: expected at most 16 KiB, got more$/,
      reason: 'payload_too_large',
    },
  },
  {
    name: 'Content-Length and Transfer-Encoding both (a smuggling attempt)',
    send: () => post(chat(), { 'content-length': '5', 'transfer-encoding': 'chunked' }),
    want: {
      status: 400,
      code: 'bad_request',
      message:
        /^the request is not valid HTTP: Transfer-Encoding can't be present with Content-Length \(HPE_INVALID_TRANSFER_ENCODING\)$/,
      reason: INVALID,
    },
  },
  {
    name: 'a lone surrogate in content',
    send: () =>
      post(`{"model":"${MODEL}","messages":[{"role":"user","content":"\\ud800"}],"max_tokens":3}`),
    want: bad(/^messages\[0\]\.content: .*(surrogate|Unicode)/, 'messages[0].content'),
  },
  {
    name: 'a gzip-compressed body (Content-Encoding: gzip)',
    send: () => post(gzipSync(chat()), { 'content-encoding': 'gzip' }),
    want: {
      status: 415,
      code: 'unsupported_media_type',
      message: /^content-encoding: expected identity \(an uncompressed body\), got "gzip"$/,
      reason: INVALID,
    },
  },
  {
    name: 'invalid UTF-8 bytes in the body',
    send: () => post(INVALID_UTF8),
    want: bad(
      new RegExp(`^request body: expected UTF-8 text, got invalid bytes at offset ${UTF8_OFFSET}$`),
      null,
    ),
  },
  ...(['max_tokens', 'temperature', 'seed'] as const).map((field): Case => ({
    name: `1e309 in ${field}`,
    // Written out: JSON.stringify cannot write a number JSON cannot hold.
    send: () =>
      post(`{"model":"${MODEL}","messages":[{"role":"user","content":"x"}],"${field}":1e309}`),
    want: bad(new RegExp(`^${field}: expected .*, got Infinity$`), field),
  })),
  {
    name: 'a duplicate top-level key (model twice)',
    send: () => post(chat().replace('{', `{"model":"${MODEL}",`)),
    want: bad(/^body: duplicate key "model"$/, 'model'),
  },
  {
    name: 'a duplicate key in a message (role twice)',
    send: () =>
      post(
        `{"model":"${MODEL}","messages":[{"role":"user","role":"system","content":"x"}],"max_tokens":3}`,
      ),
    want: bad(/^messages\[0\]: duplicate key "role"$/, 'messages[0].role'),
  },
  {
    name: 'a top-level __proto__ key',
    send: () => post(chat().replace('{', '{"__proto__":{"polluted":1},')),
    want: bad(/^__proto__: unknown field$/, '__proto__'),
  },
  {
    name: 'a __proto__ key in a message',
    send: () =>
      post(
        `{"model":"${MODEL}","messages":[{"role":"user","content":"x","__proto__":{"polluted":1}}],"max_tokens":3}`,
      ),
    want: bad(/^messages\[0\]\.__proto__: unknown field$/, 'messages[0].__proto__'),
  },
  {
    name: 'an unknown field',
    send: () => post(chat({ frobnicate: true })),
    want: bad(/^frobnicate: unknown field$/, 'frobnicate'),
  },
  {
    name: 'top_logprobs without logprobs',
    send: () => post(chat({ top_logprobs: 3 })),
    want: bad(/^top_logprobs: only allowed when logprobs is true$/, 'top_logprobs'),
  },
  {
    name: 'tool_choice: "required" with no tools to choose from',
    send: () => post(chat({ tool_choice: 'required' })),
    want: bad(
      /^tool_choice: expected "none" or absent when no tools are given, got "required"$/,
      'tool_choice',
    ),
  },
  {
    name: 'n: 129',
    send: () => post(chat({ n: 129 })),
    want: bad(/^n: expected an integer from 1 to 128, got 129$/, 'n'),
  },
  ...(
    [
      ['x-goodput-timeout-ms', '2147483648', /milliseconds in \(0, 86400000\] \(24 h\)/],
      ['x-goodput-timeout-ms', '0', /milliseconds in \(0, 86400000\] \(24 h\)/],
      ['x-goodput-deadline-ms', '1e20', /a Unix time in ms no later than 24 h from now \(\d+\)/],
      ['x-goodput-deadline-ms', 'abc', /a Unix time in ms no later than 24 h from now \(\d+\)/],
      ['x-goodput-attempt', '1e9', /an integer in \[1, 1000\]/],
    ] as const
  ).map(([header, value, limit]): Case => ({
    name: `${header}: ${value}`,
    send: () => post(chat(), { [header]: value }),
    want: bad(new RegExp(`^${header}: expected ${limit.source}, got "${value}"$`), header),
  })),
  {
    name: 'x-goodput-deadline-ms already past',
    send: () => post(chat(), { 'x-goodput-deadline-ms': String(Date.now() - 1_000) }),
    want: {
      status: 504,
      code: 'deadline_exceeded',
      message: /deadline has passed/,
      reason: 'deadline_exceeded',
    },
  },
];

for (const c of cases) {
  test(`refused: ${c.name} → ${c.want.status}, and the gateway serves on`, async () => {
    assertRefusal(await c.send(), c.want);
    assert.deepEqual(await aftermath(open.url), HEALTHY);
  });
}

test('requests Node could not parse are counted by reason', async () => {
  const invalid = (reason: string) =>
    metricValue(open.url, 'goodput_invalid_requests_total', { reason });
  const before = { bad: await invalid(INVALID), large: await invalid('payload_too_large') };
  await post(chat(), { 'content-length': '5', 'transfer-encoding': 'chunked' });
  await post(chat(), { 'x-filler': 'a'.repeat(64 * 1024) });
  assert.equal(await invalid(INVALID), before.bad + 1);
  assert.equal(await invalid('payload_too_large'), before.large + 1);
});

// An error names what was wrong, cut short (errors.ts: "so a huge input cannot bloat the
// message"): never the whole of a huge input, never every one of thousands of problems.
const ERROR_BYTES = 16 * 1024;
const bloating: [name: string, body: () => string][] = [
  ['a 3 MB unknown field name', () => chat().replace('{', `{"${'k'.repeat(3_000_000)}":0,`)],
  [
    '50,000 unknown fields',
    () =>
      chat().replace('{', `{${Array.from({ length: 50_000 }, (_, i) => `"k${i}":0`).join(',')},`),
  ],
  [
    '100,000 messages with a bad role',
    () =>
      chat({ messages: Array.from({ length: 100_000 }, () => ({ role: 'robot', content: 'x' })) }),
  ],
  [
    '300,000 bad tools',
    () => chat({ tools: Array.from({ length: 300_000 }, () => ({ type: 'x' })) }),
  ],
];

for (const [name, body] of bloating) {
  test(`${name}: a 400 whose error is cut short`, async () => {
    const a = await post(body());
    assert.equal(a.status, 400);
    assert.ok(a.header('x-goodput-request-id'));
    assert.ok(a.body.length <= ERROR_BYTES, `${a.body.length} bytes of error`);
    assert.deepEqual(await aftermath(open.url), HEALTHY);
  });
}

test('logprobs: false, its neutral value, is served', async () => {
  const a = await post(chat({ logprobs: false }));
  assert.equal(a.status, 200, a.body);
  assert.equal((JSON.parse(a.body) as { object: string }).object, 'chat.completion');
});

test('__proto__ in a body pollutes nothing in the gateway process', async () => {
  const polluting = chat().replace('{', '{"__proto__":{"polluted":1},');
  assert.equal((await post(polluting)).status, 400);
  const inMessage = `{"model":"${MODEL}","messages":[{"role":"user","content":"x","__proto__":{"polluted":1}}]}`;
  assert.equal((await post(inMessage)).status, 400);
  // The gateway runs in this process: its Object.prototype is this one.
  assert.equal(({} as { polluted?: unknown }).polluted, undefined);
  assert.equal(Object.hasOwn(Object.prototype, 'polluted'), false);
});

/** Declares 100,000 bytes, sends 1,000, and goes away. */
function abandonUpload(url: string): Promise<void> {
  return new Promise((resolve) => {
    const req = request(`${url}/v1/chat/completions`, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': '100000' },
    });
    req.once('error', () => {});
    req.once('close', () => resolve());
    req.write(`{"model":"${MODEL}","messages":[{"role":"user","content":"${'x'.repeat(950)}`, () =>
      // Let the gateway start on it before the client vanishes.
      setTimeout(() => req.destroy(), 5),
    );
  });
}

test('300 clients gone mid-upload: counted as upload cancels, nothing logged, served on', async () => {
  const upload = { stage: 'upload' };
  const before = await metricValue(open.url, 'goodput_cancels_total', upload);
  const lines = log.lines.length;
  for (let round = 0; round < 10; round++) {
    await Promise.all(Array.from({ length: 30 }, () => abandonUpload(open.url)));
  }
  await until(
    async () => (await metricValue(open.url, 'goodput_cancels_total', upload)) - before >= 300,
  );
  assert.equal(await metricValue(open.url, 'goodput_cancels_total', upload), before + 300);
  assert.deepEqual(log.lines.slice(lines), [], 'no log line for a client gone');
  assert.equal(await metricValue(open.url, 'goodput_in_flight_requests'), 0, 'none left behind');
  assert.deepEqual(await aftermath(open.url), HEALTHY);
});

test('500 garbage requests at once, then a normal request: every one refused cleanly, then served', async () => {
  const garbage = [
    () => post(NESTED),
    () => post('{"model": '),
    () => post(chat().replace('{', `{"model":"${MODEL}",`)),
    () => post(chat({ frobnicate: 1 })),
    () => post(chat().replace(/}$/, ',"temperature":1e309}')),
    () => post(chat({ model: 'm'.repeat(10_000) })),
    () => post(INVALID_UTF8),
    () => post(chat(), { 'x-goodput-timeout-ms': '0' }),
    () => post(chat(), { 'x-goodput-attempt': '1e9' }),
    () => post(chat(), { 'x-filler': 'a'.repeat(64 * 1024) }),
    () => post(chat().replace('{', '{"__proto__":{"polluted":1},')),
  ];
  const answers = await Promise.all(
    Array.from({ length: 500 }, (_, i) => garbage[i % garbage.length]()),
  );
  const statuses = new Map<number, number>();
  for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
  assert.deepEqual([...statuses.keys()].sort(), [400, 404, 431], JSON.stringify([...statuses]));
  for (const a of answers) {
    const body = JSON.parse(a.body) as { error: { message: string } };
    assert.equal(typeof body.error.message, 'string');
    if (a.status === 431) continue;
    assert.ok(a.header('x-goodput-request-id'));
    assert.equal(a.header('x-request-id'), a.header('x-goodput-request-id'), 'as OpenAI names it');
  }
  assert.deepEqual(await aftermath(open.url), HEALTHY);
  assert.equal(({} as { polluted?: unknown }).polluted, undefined);
});

test('the gateway logged no error through all of it', () => {
  assert.deepEqual(
    log.lines.filter((l) => l.level === 'error'),
    [],
  );
});
