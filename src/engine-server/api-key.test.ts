// vLLM's --api-key on the simulated engine: /v1 paths need one of the keys as a bearer token,
// and are otherwise a 401 as vLLM words it; probes, the scrape and CORS preflights stay open.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEngineServer } from './engine-app.ts';

test('with --api-key, /v1 needs a key given; /health and /metrics stay open', async () => {
  const { app, close } = createEngineServer({ profile: 'const:step_ms=2', apiKeys: ['k1', 'k2'] });
  const get = (path: string, authorization?: string, method = 'GET') =>
    app.request(path, { method, headers: authorization === undefined ? {} : { authorization } });
  for (const auth of [
    undefined,
    'Bearer nope',
    'Bearer  k1',
    'Bearer k1k2',
    'Basic k1',
    'k1',
    'Bearer',
  ]) {
    const res = await get('/v1/models', auth);
    assert.equal(res.status, 401, String(auth));
    assert.deepEqual(await res.json(), { error: 'Unauthorized' });
  }
  for (const auth of ['Bearer k1', 'Bearer k2', 'bearer k2']) {
    assert.equal((await get('/v1/models', auth)).status, 200, auth);
  }
  const chat = await app.request('/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'llama-3-8b', messages: [{ role: 'user', content: 'x' }] }),
  });
  assert.equal(chat.status, 401);
  assert.equal((await get('/health')).status, 200);
  assert.equal((await get('/metrics')).status, 200);
  assert.notEqual((await get('/v1/models', undefined, 'OPTIONS')).status, 401);
  close();
  const open = createEngineServer({ profile: 'const:step_ms=2' });
  assert.equal((await open.app.request('/v1/models')).status, 200, 'no keys: open');
  open.close();
});
