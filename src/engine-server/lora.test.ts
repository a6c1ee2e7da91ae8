// LoRA adapters through the engine server, as vLLM serves them: a request whose model names an
// adapter runs with it, /v1/models lists each adapter with its parent, /metrics exports
// vllm:lora_requests_info, and an unknown model is a 404 naming what is served.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CHAT, MODEL, expectError, post, testServer, user } from './app-test-kit.ts';

const server = () =>
  testServer({ loraModules: ['sql-lora', 'chat-lora'], maxLoras: 1, loraLoadMs: 5 });

/** The labels and value of `vllm:lora_requests_info` on `s`'s /metrics. */
async function loraInfo(s: ReturnType<typeof server>) {
  const metrics = await (await s.app.request('/metrics')).text();
  const m =
    /^vllm:lora_requests_info\{running_lora_adapters="([^"]*)",waiting_lora_adapters="([^"]*)",max_lora="(\d+)"\} (\S+)$/m.exec(
      metrics,
    );
  assert.ok(m, metrics);
  return { running: m[1], waiting: m[2], maxLora: m[3], value: Number(m[4]) };
}

test('a request naming an adapter is served with it, under its name; the gauge names it while it runs', async () => {
  const s = server();
  const streamed = await post(s, CHAT, {
    model: 'sql-lora',
    messages: user('SELECT?'),
    max_tokens: 40,
    ignore_eos: true,
    stream: true,
  });
  const reader = streamed.body!.getReader();
  // Past the role chunk, to the first token: the request is running.
  const text = new TextDecoder();
  while (!/"content":"[^"]/.test(text.decode((await reader.read()).value)));
  // As vLLM's: the adapters of running requests.
  const running = await loraInfo(s);
  assert.deepEqual([running.running, running.waiting, running.maxLora], ['sql-lora', '', '1']);
  // Its value is the Unix time of the reading, as vLLM's (time.time()).
  assert.ok(Math.abs(running.value - Date.now() / 1000) < 60, String(running.value));
  while (!(await reader.read()).done);
  const res = await post(s, CHAT, { model: 'sql-lora', messages: user('SELECT?'), max_tokens: 3 });
  assert.equal(res.status, 200);
  assert.equal(((await res.json()) as { model: string }).model, 'sql-lora');
  // None running: none named, though the adapter is still in its slot.
  assert.equal((await loraInfo(s)).running, '');
  assert.deepEqual(s.backend.load().loras, ['sql-lora']);
});

test('/v1/models lists the base model and each adapter with its parent', async () => {
  const list = (await (await server().app.request('/v1/models')).json()) as {
    data: { id: string; parent?: string }[];
  };
  assert.deepEqual(
    list.data.map((m) => [m.id, m.parent ?? null]),
    [
      [MODEL, null],
      ['sql-lora', MODEL],
      ['chat-lora', MODEL],
    ],
  );
});

test('an unknown model is a 404 naming the base model and the adapters', async () => {
  await expectError(
    await post(server(), CHAT, { model: 'no-lora', messages: user('hi') }),
    404,
    /expected one of llama-3-8b, sql-lora, chat-lora, got "no-lora"/,
  );
});

test('without adapters, no LoRA series is exported', async () => {
  const metrics = await (await testServer().app.request('/metrics')).text();
  assert.doesNotMatch(metrics, /^vllm:lora_requests_info\{/m);
});
