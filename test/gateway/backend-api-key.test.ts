// Backends that require a key, as vLLM started with --api-key does: `goodput engine --api-key`
// refuses /v1 without it, and `goodput serve --backend-api-key` (or $GOODPUT_BACKEND_API_KEY)
// sends it with every request upstream. A gateway without the key is refused by the backend:
// the client gets the gateway's own 502 or 503, never the backend's 401, and the log says,
// once, which backend refused the gateway's credentials and what to set. The flag without a
// --backend to send it to is refused at start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { runGoodput, startEngine, startServe, until } from './process-kit.ts';

const KEY = 'sk-backend-secret';
const ask = {
  model: 'llama-3-8b',
  messages: [{ role: 'user' as const, content: 'Is the key right?' }],
  max_tokens: 4,
};
const clientOf = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: 'x', maxRetries: 0 });
/** `goodput serve ARGS`, once its backend is ready (its /metrics, which asks no key, read). */
async function ready(args: string[]) {
  const s = await startServe(args);
  await until('ready', async () => (await fetch(`${s.url}/readyz`)).status === 200);
  return s;
}

test('the gateway sends the backends the key they require; without it, a 5xx of its own and one log line', async () => {
  const engine = await startEngine(['--api-key', KEY, '--profile', 'const:step_ms=2']);
  assert.equal((await fetch(`${engine}/v1/models`)).status, 401, 'the engine asks a key');

  const keyed = await ready(['--backend', engine, '--backend-api-key', KEY]);
  const served = await clientOf(keyed.url).chat.completions.create(ask);
  assert.equal(served.choices[0]?.finish_reason, 'length');
  const stream = await clientOf(keyed.url).chat.completions.create({ ...ask, stream: true });
  let chunks = 0;
  for await (const _ of stream) chunks++;
  assert.ok(chunks >= 4, String(chunks));

  process.env.GOODPUT_BACKEND_API_KEY = KEY;
  const fromEnv = await ready(['--backend', engine]).finally(() => {
    delete process.env.GOODPUT_BACKEND_API_KEY;
  });
  assert.equal(
    (await clientOf(fromEnv.url).chat.completions.create(ask)).object,
    'chat.completion',
  );

  const keyless = await ready(['--backend', engine]);
  for (let i = 0; i < 2; i++) {
    const refused = await clientOf(keyless.url)
      .chat.completions.create(ask)
      .catch((e: { status: number; message: string }) => e);
    // The gateway's own answer, never the backend's 401: a 502 (the backend it tried failed),
    // or a 503 (tried again, no other backend was left to take it).
    assert.ok('status' in refused, 'refused');
    assert.ok([502, 503].includes(refused.status), `${refused.status} ${refused.message}`);
  }
  const toldLines = () =>
    keyless.proc
      .jsonLines()
      .filter((l) => String(l.msg).includes("refused the gateway's credentials"));
  // Its stdout reaches this process when the pipe delivers it, not with the answer.
  await until('the log line', () => toldLines().length > 0, 10_000, 20);
  const told = toldLines();
  assert.equal(told.length, 1, keyless.proc.output());
  assert.match(
    String(told[0]?.msg),
    /HTTP 401\): give the gateway the key it requires \(--backend-api-key/,
  );
  assert.ok(!keyless.proc.output().includes(KEY), 'no key in its output');
});

test('--backend-api-key without a --backend to send it to is refused at start', async () => {
  const run = await runGoodput(['serve', '--port', '0', '--backend-api-key', KEY]);
  assert.equal(run.code, 2, run.out);
  assert.match(run.out, /--backend-api-key: expected a --backend to send it to/);
  assert.ok(!run.out.includes(KEY), 'the key is not printed');
});
