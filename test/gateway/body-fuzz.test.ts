// Valid chat, text and Responses bodies, mutated at random (seeded): fields dropped, replaced by
// values of every type and size, nested mutations, fields added. Sent 16 at a time to a gateway
// in front of two `goodput engine` servers, every one gets an answer of its own making: a 200
// that is whole (no error event in its stream), a 4xx in OpenAI's error shape with a message, or
// a 503/504 of admission — never another 5xx — with its request id; each is counted once by
// endpoint and by status, and the gateway is ready after.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MODEL, engines, gateway, metricValue } from './gateway-kit.ts';
import { SeededRng } from '../../src/runtime/seeded-rng.ts';

const SENT = 900;
const rng = new SeededRng(7);
const pick = <T>(a: readonly T[]): T => a[Math.floor(rng.next() * a.length)];

/** Values of every JSON type and shape a field may be given instead. */
const WEIRD: readonly unknown[] = [
  null,
  true,
  0,
  -1,
  1.5,
  1e308,
  2 ** 53 + 1,
  '',
  'x',
  '\u0000',
  '\ud800',
  'é'.repeat(1_000),
  'a'.repeat(70_000),
  [],
  [null],
  [[]],
  {},
  { a: 1 },
  { type: 'text' },
  { type: 'image_url' },
  { role: 'user' },
  { role: 'tool', content: 'x' },
  { role: 'assistant', tool_calls: [{}] },
  [{ type: 'text', text: 1 }],
  [{ type: 'input_text' }],
  'NaN',
];

const BODIES = {
  '/v1/chat/completions': () => ({
    model: MODEL,
    messages: [{ role: 'user', content: 'hello there' }],
    max_tokens: 5,
    ...(rng.next() < 0.5 ? { stream: true, stream_options: { include_usage: true } } : {}),
    temperature: 0.5,
    n: 1,
    tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    tool_choice: 'auto',
    stop: ['x'],
    seed: 3,
    user: 'u',
    service_tier: 'auto',
    reasoning_effort: 'low',
    max_completion_tokens: 5,
    prompt_cache_key: 'k',
  }),
  '/v1/completions': () => ({
    model: MODEL,
    prompt: 'hello',
    max_tokens: 5,
    stream: rng.next() < 0.5,
    echo: false,
    suffix: null,
    best_of: 1,
  }),
  '/v1/responses': () => ({
    model: MODEL,
    input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }],
    max_output_tokens: 5,
    stream: rng.next() < 0.5,
    instructions: 'be brief',
    tools: [],
    store: true,
    previous_response_id: null,
    reasoning: { effort: 'low' },
    text: { format: { type: 'text' } },
    background: false,
  }),
} as const;

function mutate(o: unknown): unknown {
  if (Array.isArray(o)) {
    const a = o.map((x) => (rng.next() < 0.2 ? mutate(x) : x));
    if (rng.next() < 0.1) a.push(pick(WEIRD));
    if (rng.next() < 0.05) a.splice(0, 1);
    return a;
  }
  if (o !== null && typeof o === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(o)) {
      const r = rng.next();
      if (r < 0.06) continue;
      out[k] = r < 0.14 ? pick(WEIRD) : r < 0.26 ? mutate(v) : v;
    }
    if (rng.next() < 0.05) out[pick(['extra', 'n', 'best_of', 'priority', 'input'])] = pick(WEIRD);
    return out;
  }
  return rng.next() < 0.5 ? pick(WEIRD) : o;
}

test('mutated bodies, hundreds at a time: each answered by the gateway itself, none a 500', async () => {
  const gw = await gateway(await engines(2), 'goodput');
  const sent = new Map<string, number>();
  const answered = new Map<string, number>();
  const wrong: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < SENT) {
      next++;
      const path = pick(Object.keys(BODIES) as (keyof typeof BODIES)[]);
      const body = JSON.stringify(mutate(BODIES[path]()));
      sent.set(path, (sent.get(path) ?? 0) + 1);
      const res = await fetch(`${gw.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      const text = await res.text();
      answered.set(String(res.status), (answered.get(String(res.status)) ?? 0) + 1);
      const what = `${res.status} ${path} ${body.slice(0, 300)} → ${text.slice(0, 300)}`;
      if (res.headers.get('x-request-id') === null) wrong.push(`no request id: ${what}`);
      if (res.status === 200) {
        if (/"error":\{/.test(text)) wrong.push(`an error in a 200: ${what}`);
        continue;
      }
      if (res.status >= 500 && res.status !== 503 && res.status !== 504) wrong.push(what);
      const error = (JSON.parse(text) as { error?: { message?: unknown } }).error;
      if (typeof error?.message !== 'string' || error.message === '') {
        wrong.push(`not OpenAI's error shape: ${what}`);
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  assert.deepEqual(wrong, []);
  // Some of each kind were served, and many refused: the mutations reached both.
  assert.ok((answered.get('200') ?? 0) > 100, JSON.stringify([...answered]));
  assert.ok((answered.get('400') ?? 0) > 300, JSON.stringify([...answered]));
  for (const [path, n] of sent) {
    const endpoint = { '/v1/chat/completions': 'chat', '/v1/completions': 'completion' }[path];
    const labels = { endpoint: endpoint ?? 'responses' };
    assert.equal(await metricValue(gw.url, 'goodput_api_requests_total', labels), n, path);
  }
  for (const [status, n] of answered) {
    const counted = await Promise.all(
      ['chat', 'completion', 'responses'].map((endpoint) =>
        metricValue(gw.url, 'goodput_api_answers_total', { endpoint, status }),
      ),
    );
    assert.equal(
      counted.reduce((a, b) => a + b, 0),
      n,
      `status ${status}`,
    );
  }
  assert.equal((await fetch(`${gw.url}/readyz`)).status, 200);
});
