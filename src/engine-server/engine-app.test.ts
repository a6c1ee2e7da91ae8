// The engine server in-process (`app.request`, no socket): health and models, injected faults,
// cancellation of a request whose client leaves, token-id prompts, min_tokens, and configuration
// errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEngineServer } from './engine-app.ts';
import { CHAT, MODEL, TEXT, expectError, post, testServer, user } from './app-test-kit.ts';

const main = testServer();

test('health (and /ping, by GET or POST) is 200 while serving and 503 after close; requests after close are 503', async () => {
  const s = testServer();
  const probes = () =>
    Promise.all([
      s.app.request('/health'),
      s.app.request('/ping'),
      s.app.request('/ping', { method: 'POST' }),
    ]).then((rs) => rs.map((r) => r.status));
  assert.deepEqual(await probes(), [200, 200, 200]);
  s.close();
  assert.deepEqual(await probes(), [503, 503, 503]);
  await expectError(await post(s, TEXT, { model: MODEL, prompt: 'hi' }), 503, /shutting down/);
});

test('fail injection answers 500 before any token', async () => {
  const failing = testServer({ faults: { failRate: 1 } });
  const err = await expectError(
    await post(failing, TEXT, { model: MODEL, prompt: 'hi', stream: true }),
    500,
    /injected by --fail-rate/,
  );
  assert.equal(err.type, 'server_error');
  assert.equal(failing.backend.load().waiting + failing.backend.load().running, 0);
});

test('a stalled stream still delivers every token and finishes', async () => {
  const stalling = testServer({ faults: { stallRate: 1, stallMs: 15 } });
  const res = await post(stalling, TEXT, {
    model: MODEL,
    prompt: 'hi',
    stream: true,
    max_tokens: 6,
    ignore_eos: true,
  });
  const events = (await res.text()).split('\n\n').filter((e) => e !== '');
  // Six tokens, the last with the finish (as vLLM sends it), then [DONE].
  assert.equal(events.length, 7);
  assert.match(events.at(-2) ?? '', /"finish_reason":"length"/);
  assert.equal(events.at(-1), 'data: [DONE]');
});

test('without a socket, an injected crash fails the streamed body', async () => {
  const crashing = testServer({ faults: { crashRate: 1 } });
  const res = await post(crashing, CHAT, {
    model: MODEL,
    messages: user('hi'),
    stream: true,
    max_tokens: 4,
    ignore_eos: true,
  });
  assert.equal(res.status, 200);
  await assert.rejects(res.text(), /injected crash/);
  assert.equal(crashing.backend.load().kvUsedBlocks, 0);
});

test('a client that aborts a non-streamed request cancels it in the engine', async () => {
  const s = testServer();
  const ac = new AbortController();
  const body = { model: MODEL, prompt: 'hi', max_tokens: 5000, ignore_eos: true };
  const pending = post(s, TEXT, body, { signal: ac.signal });
  for (let i = 0; i < 1000 && s.backend.load().running === 0; i++)
    await new Promise((r) => setTimeout(r, 1));
  assert.equal(s.backend.load().running, 1);
  ac.abort();
  assert.equal(s.backend.load().running, 0, 'cancelled in the same tick');
  assert.equal(s.backend.load().kvUsedBlocks, 0);
  await pending.then(
    (r) => assert.equal(r.status, 503),
    () => {},
  );
});

test('/v1/models has the OpenAI list shape with vLLM extras', async () => {
  const body = (await (await main.app.request('/v1/models')).json()) as {
    object: string;
    data: Record<string, unknown>[];
  };
  assert.equal(body.object, 'list');
  assert.equal(body.data.length, 1);
  assert.equal(body.data[0].id, MODEL);
  assert.equal(body.data[0].object, 'model');
  assert.equal(body.data[0].max_model_len, 8192);
  assert.equal(typeof body.data[0].created, 'number');
});

test('a token-id prompt is served, its prompt tokens counted exactly', async () => {
  for (const prompt of [[9906, 11, 1917], [[128000, 40, 1097, 264, 8415]]]) {
    const res = await post(main, TEXT, { model: MODEL, prompt, max_tokens: 2, ignore_eos: true });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { usage: { prompt_tokens: number } };
    assert.equal(body.usage.prompt_tokens, prompt.flat().length);
  }
});

test('min_tokens: no reply shorter, whatever the model would have said', async () => {
  for (let i = 0; i < 5; i++) {
    const body = { model: MODEL, messages: user('hi'), max_tokens: 60, min_tokens: 50 };
    const res = await post(main, CHAT, body);
    assert.equal(res.status, 200);
    const { usage } = (await res.json()) as { usage: { completion_tokens: number } };
    assert.ok(usage.completion_tokens >= 50, `${usage.completion_tokens} tokens`);
  }
});

test("a text completion that names no max_tokens gets 16, as vLLM's and OpenAI's; null asks for no limit", async () => {
  const tokens = async (extra: object) => {
    const res = await post(main, TEXT, { model: MODEL, prompt: 'hi', ignore_eos: true, ...extra });
    assert.equal(res.status, 200);
    const body = (await res.json()) as {
      usage: { completion_tokens: number };
      choices: { finish_reason: string }[];
    };
    return [body.usage.completion_tokens, body.choices[0].finish_reason];
  };
  assert.deepEqual(await tokens({}), [16, 'length']);
  const [unbounded] = await tokens({ max_tokens: null });
  assert.ok((unbounded as number) > 16, `${unbounded} tokens`);
});

test('a stop string ends the reply where it begins, finish stop, whole or streamed', async () => {
  const ask = { model: MODEL, prompt: 'hi', max_tokens: 40, ignore_eos: true, stop: ['model'] };
  const whole = await post(main, TEXT, ask);
  const body = (await whole.json()) as {
    choices: { text: string; finish_reason: string }[];
    usage: { completion_tokens: number };
  };
  assert.deepEqual(
    [body.choices[0].text, body.choices[0].finish_reason, body.usage.completion_tokens],
    ['the quick ', 'stop', 3],
  );
  const streamed = await post(main, TEXT, {
    ...ask,
    stream: true,
    include_stop_str_in_output: true,
  });
  const chunks = (await streamed.text())
    .split('\n\n')
    .filter((e) => e.startsWith('data: {'))
    .map(
      (e) =>
        JSON.parse(e.slice(6)) as { choices: { text: string; finish_reason: string | null }[] },
    );
  assert.equal(chunks.map((c) => c.choices[0]?.text ?? '').join(''), 'the quick model');
  assert.equal(chunks.at(-1)?.choices[0].finish_reason, 'stop');
});

test("a request that names no model is served the engine's, as vLLM's server serves it; null is refused", async () => {
  const chat = await post(main, CHAT, { messages: user('hi'), max_tokens: 2 });
  assert.equal(chat.status, 200);
  assert.equal(((await chat.json()) as { model: string }).model, MODEL);
  const text = await post(main, TEXT, { prompt: 'hi', max_tokens: 2 });
  assert.equal(((await text.json()) as { model: string }).model, MODEL);
  await expectError(await post(main, TEXT, { model: null, prompt: 'hi' }), 400, /^model: /);
});

test('/tokenize and /detokenize say the engine has no tokenizer: a 404 naming why', async () => {
  for (const path of ['/tokenize', '/detokenize']) {
    const res = await post(main, path, { model: MODEL, prompt: 'hi' });
    await expectError(
      res,
      404,
      new RegExp(`POST ${path}: not served by goodput engine, which has no tokenizer`),
    );
  }
});

test('a bad configuration fails at creation, naming the option', () => {
  assert.throws(
    () => createEngineServer({ model: 'gpt-2' }),
    /^ConfigError: model: expected one of/,
  );
  assert.throws(
    () => createEngineServer({ faults: { crashRate: 1.5 } }),
    /faults\.crashRate: expected a number in \[0, 1\], got 1.5/,
  );
});

test('a request of n choices draws its faults once: --fail-rate is a share of requests, and no choice is aborted for it', async () => {
  const failing = testServer({ faults: { failRate: 0.5 } });
  let failed = 0;
  const requests = 200;
  for (let i = 0; i < requests; i++) {
    const body = { model: MODEL, prompt: 'hi', max_tokens: 2, n: 4 };
    const res = await post(failing, TEXT, body);
    await res.text();
    if (res.status === 500) failed++;
    else assert.equal(res.status, 200);
  }
  // A share of about 0.5, far from the 1 − 0.5⁴ ≈ 0.94 of a draw per choice.
  assert.ok(failed > 70 && failed < 130, `${failed} of ${requests} failed`);
  const metrics = await (await failing.app.request('/metrics')).text();
  assert.match(metrics, /vllm:request_success_total\{[^}]*finished_reason="abort"[^}]*\} 0\n/);
});

test("vLLM's request_id in the body names the request where no X-Request-Id header does", async () => {
  const s = testServer();
  const named = await post(s, CHAT, {
    model: MODEL,
    messages: user('hi'),
    max_tokens: 1,
    request_id: 'job-7',
  });
  assert.equal(((await named.json()) as { id: string }).id, 'chatcmpl-job-7');
  const text = await post(
    s,
    TEXT,
    { model: MODEL, prompt: 'hi', max_tokens: 1, request_id: 'job-8' },
    {
      headers: { 'content-type': 'application/json', 'x-request-id': 'header-8' },
    },
  );
  assert.equal(
    ((await text.json()) as { id: string }).id,
    'cmpl-header-8',
    'the header first, as vLLM',
  );
});

test('a path served, asked with another method, is a 405 naming those it takes; an unknown path a 404', async () => {
  const s = testServer();
  const wrong = await s.app.request(CHAT, { method: 'GET' });
  assert.equal(wrong.status, 405);
  assert.equal(wrong.headers.get('allow'), 'POST');
  await expectError(
    wrong,
    405,
    /^GET \/v1\/chat\/completions: method not allowed \(allowed: POST\)$/,
  );
  const models = await s.app.request('/v1/models', { method: 'POST' });
  assert.equal(models.headers.get('allow'), 'GET, HEAD');
  await expectError(await s.app.request('/v1/nope'), 404, /no such route/);
});
