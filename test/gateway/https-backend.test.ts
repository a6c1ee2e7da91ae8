// A backend served over HTTPS, as a vLLM behind a TLS-terminating sidecar or a cloud endpoint
// is: `goodput serve --backend https://…` scrapes it, streams from it and reads its models over
// TLS, verifying its certificate against Node's CA store — here a private CA given to the
// gateway's process in NODE_EXTRA_CA_CERTS, as an operator gives one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import OpenAI from 'openai';
import { createEngineServer } from '../../src/engine-server/engine-app.ts';
import { startServe, until } from './process-kit.ts';
import { metricValue } from './gateway-kit.ts';

const TLS = new URL('../fixtures/tls/', import.meta.url);

test('a backend over HTTPS is scraped and streamed from, its certificate verified', async () => {
  const engine = createEngineServer({ profile: 'const:step_ms=2', loraModules: ['sql-lora'] });
  const server = serve({
    fetch: engine.app.fetch,
    port: 0,
    hostname: '127.0.0.1',
    createServer,
    serverOptions: {
      key: readFileSync(new URL('key.pem', TLS)),
      cert: readFileSync(new URL('cert.pem', TLS)),
    },
  });
  await new Promise<void>((r) => (server.listening ? r() : server.once('listening', () => r())));
  const { port } = server.address() as AddressInfo;
  try {
    process.env.NODE_EXTRA_CA_CERTS = new URL('cert.pem', TLS).pathname;
    const gw = await startServe([
      '--backend',
      `https://127.0.0.1:${port}/v1`,
      '--lora-modules',
      'sql-lora',
    ]).finally(() => delete process.env.NODE_EXTRA_CA_CERTS);
    await until('ready', async () => (await fetch(`${gw.url}/readyz`)).status === 200);
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'sql-lora',
      messages: [{ role: 'user', content: 'over TLS?' }],
      max_tokens: 6,
      stream: true,
    });
    let tokens = 0;
    for await (const chunk of stream) if (chunk.choices[0]?.delta.content) tokens++;
    assert.equal(tokens, 6);
    // Counted under the adapter, which the backend's /v1/models, read over TLS, said it serves.
    const done = { class: 'interactive', model_name: 'sql-lora' };
    assert.equal(await metricValue(gw.url, 'goodput_completed_requests_total', done), 1);
  } finally {
    engine.close();
    server.close();
  }
});
