// `goodput serve --status-port`: a real process whose second port answers the probes and the
// scrape — and nothing else: a completion sent there is a 404 naming what it serves, counted and
// recorded as any refusal; a port already taken stops the start. Under SIGTERM, with a stream in flight, its /readyz turns 503 with the
// API port's, and the process still drains and exits 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { printedUrl, runGoodput, startServe, until } from './process-kit.ts';

const MODEL = 'llama-3-8b';

test('the status port answers probes and the scrape, refuses the rest by name, and drains with the gateway', async () => {
  const { url, proc } = await startServe([
    '--status-port',
    '0',
    '--profile',
    'const:step_ms=15',
    '--drain-timeout',
    '30',
  ]);
  const status = await printedUrl(proc, /status port at (http[^\s"]+?) /);
  assert.notEqual(status, url);
  await until('ready on the status port', async () => (await fetch(`${status}/readyz`)).ok);
  for (const path of ['/healthz', '/health', '/readyz']) {
    const res = await fetch(`${status}${path}`);
    assert.equal(res.status, 200, path);
    await res.arrayBuffer();
  }
  assert.equal((await fetch(`${status}/readyz`, { method: 'HEAD' })).status, 200);

  const chat = (to: string, stream: boolean, maxTokens: number) =>
    fetch(`${to}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: MODEL,
        messages: [{ role: 'user', content: 'Count.' }],
        max_tokens: maxTokens,
        ignore_eos: true,
        stream,
      }),
    });
  const refused = await chat(status, false, 3);
  assert.equal(refused.status, 404);
  const { error } = (await refused.json()) as { error: { message: string } };
  assert.equal(
    error.message,
    'POST /v1/chat/completions: not served on the status port (it serves /healthz, /readyz, /health, /metrics)',
  );
  assert.match(refused.headers.get('x-goodput-request-id') ?? '', /^[0-9a-f]{8,}/);
  const metrics = await (await fetch(`${status}/metrics`)).text();
  assert.match(metrics, /^goodput_invalid_requests_total\{reason="not_found"\} 1$/m);

  // SIGTERM with a stream in flight: not ready on both ports at once; the stream ends, and so
  // does the process.
  const stream = await chat(url, true, 200);
  assert.equal(stream.status, 200);
  const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
  await reader.read();
  proc.child.kill('SIGTERM');
  await until('not ready on the status port', async () => {
    const res = await fetch(`${status}/readyz`);
    return res.status === 503 && ((await res.json()) as { status: string }).status === 'draining';
  });
  assert.equal((await fetch(`${url}/readyz`)).status, 503);
  let text = '';
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    text += Buffer.from(r.value).toString();
  }
  assert.match(text, /data: \[DONE\]/, 'the stream ran to its end');
  assert.deepEqual(await proc.exited, { code: 0, signal: null });
});

test('a status port already taken stops the start, naming the flag', async () => {
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  const port = (busy.address() as AddressInfo).port;
  const { code, out } = await runGoodput(['serve', '--port', '0', '--status-port', String(port)]);
  busy.close();
  assert.equal(code, 2, out);
  assert.match(out, new RegExp(`--status-port: expected a free port, got ${port}`));
});
