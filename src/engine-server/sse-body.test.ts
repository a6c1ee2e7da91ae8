// The engine's two ways to stream an answer, side by side on one server: on its socket, written
// straight to Node's response, and in-process (`app.request`), as a web stream. The same request
// gives the same events over both, and a socket closed mid-stream frees its request at once.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { serveEngine, type ListeningEngineServer } from './serve.ts';

const MODEL = 'llama-3-8b';

let engine: ListeningEngineServer;

before(async () => {
  engine = await serveEngine({ profile: 'const:step_ms=2', seed: 7, port: 0 });
});

after(() => engine.close());

/** Polls `check` on the next turns of the event loop until it holds (no fixed sleeps). */
async function eventually(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000 && !check(); i++) await new Promise((r) => setTimeout(r, 2));
  assert.ok(check(), what);
}

/** The same id on both paths, so the chunks can be compared whole. */
const post = (body: unknown): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', 'x-request-id': 'same' },
  body: JSON.stringify(body),
});

/** An SSE body's events, with the values that follow the wall clock (`created`, `*_ms`) as their type. */
function events(text: string): unknown[] {
  assert.ok(text.endsWith('\n\n'), 'the body ends with a whole event');
  return text
    .slice(0, -2)
    .split('\n\n')
    .map((event) => {
      assert.match(event, /^data: /);
      const data = event.slice('data: '.length);
      return data === '[DONE]'
        ? data
        : JSON.parse(data, (k, v: unknown) =>
            k === 'created' || k.endsWith('_ms') ? typeof v : v,
          );
    });
}

const STREAMS = [
  ['/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }] }],
  ['/v1/completions', { prompt: 'hi' }],
] as const;

for (const [path, prompt] of STREAMS) {
  test(`${path}: the same events on the socket as in-process`, async () => {
    const body = {
      model: MODEL,
      ...prompt,
      max_tokens: 6,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
    };
    const answers = [
      await fetch(`${engine.url}${path}`, post(body)),
      await engine.app.request(path, post(body)),
    ];
    for (const res of answers) {
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
      assert.equal(res.headers.get('cache-control'), 'no-cache');
    }
    const [onSocket, inProcess] = await Promise.all(
      answers.map(async (r) => events(await r.text())),
    );
    assert.deepEqual(onSocket, inProcess);
    // A role chunk (chat), six tokens — the last with the finish, as vLLM sends it — the usage
    // with its timings, [DONE].
    assert.equal(onSocket.length, (path === '/v1/chat/completions' ? 1 : 0) + 6 + 2);
    const last = onSocket.at(-3) as { choices: { finish_reason: string | null }[] };
    assert.equal(last.choices[0].finish_reason, 'length');
    assert.equal(onSocket.at(-1), '[DONE]');
    const { usage, timings } = onSocket.at(-2) as {
      usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
      timings: unknown;
    };
    assert.equal(usage.completion_tokens, 6);
    assert.equal(usage.total_tokens, usage.prompt_tokens + 6);
    assert.deepEqual(timings, {
      queue_ms: 'number',
      prefill_ms: 'number',
      first_decode_ms: 'number',
    });
  });
}

test('a socket closed mid-stream cancels its generation and frees its KV', async () => {
  const abortsBefore = engine.backend.counters().ended.abort;
  const runningWhenClosed = await new Promise<number>((done, fail) => {
    const req = request(
      `${engine.url}/v1/completions`,
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        let events = 0;
        res.on('data', (chunk: Buffer) => {
          events += chunk.toString().split('data: ').length - 1;
          if (events < 3) return;
          const running = engine.backend.load().running;
          req.destroy();
          done(running);
        });
      },
    );
    // Closing it ourselves errors it too, after `done`: a no-op then.
    req.on('error', fail);
    req.end(
      JSON.stringify({
        model: MODEL,
        prompt: 'hi',
        max_tokens: 5000,
        ignore_eos: true,
        stream: true,
      }),
    );
  });
  assert.equal(runningWhenClosed, 1);
  await eventually(() => {
    const load = engine.backend.load();
    return load.running === 0 && load.waiting === 0 && load.kvUsedBlocks === 0;
  }, 'the engine still holds the request whose socket closed');
  assert.equal(engine.backend.counters().ended.abort, abortsBefore + 1);
  const metrics = await (await fetch(`${engine.url}/metrics`)).text();
  assert.match(
    metrics,
    new RegExp(`^vllm:num_requests_running\\{model_name="${MODEL}"\\} 0$`, 'm'),
  );
});
