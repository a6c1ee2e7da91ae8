// A backend's refusal of a request (its 4xx) reaches the client in OpenAI's shape, with the
// backend's own words: as it is when the backend already speaks OpenAI's shape (vLLM 0.10 and
// later, llama.cpp), and put into it from vLLM's older flat error and TGI's, which OpenAI's
// clients would otherwise read as an error without a message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { MODEL, engines, gateway, metricValue, onTeardown } from './gateway-kit.ts';

/** A server that is ready, lists the model, and refuses every completion with `body`. */
async function refusingBackend(body: string, status = 400): Promise<{ readonly url: string }> {
  const server = createServer((req, res) => {
    req.resume();
    if (req.url === '/metrics') {
      res.end('vllm:num_requests_running 0\nvllm:num_requests_waiting 0\n');
    } else if (req.url === '/v1/models') {
      res.end(JSON.stringify({ data: [{ id: MODEL, object: 'model', parent: null }] }));
    } else {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(body);
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onTeardown(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const CASES = [
  [
    'vLLM 0.10+ (OpenAI shape, kept as it is)',
    '{"error":{"message":"temperature must be non-negative","type":"BadRequestError","param":"temperature","code":400}}',
    'temperature must be non-negative',
  ],
  [
    "vLLM's older flat error",
    '{"object":"error","message":"best_of must be 1 when using greedy sampling","type":"BadRequestError","param":null,"code":400}',
    'best_of must be 1 when using greedy sampling',
  ],
  [
    "TGI's",
    '{"error":"Input validation error: `top_p` must be > 0.0 and < 1.0","error_type":"validation"}',
    'Input validation error: `top_p` must be > 0.0 and < 1.0',
  ],
] as const;

for (const [server, body, message] of CASES) {
  test(`a backend's 400 in ${server}: the openai client reads its message`, async () => {
    const gw = await gateway([await refusingBackend(body)], 'goodput');
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const refused = await client.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 })
      .then(
        () => undefined,
        (e: unknown) => e as { status?: number; error?: { message?: string } },
      );
    assert.equal(refused?.status, 400);
    assert.equal(refused.error?.message, message);
  });
}

// vLLM answers a chat request's field in chat's words; a Responses request became that chat
// request at the gateway, and its client is told the field it sent, in the backend's words.
const RESPONSES_CASES = [
  [
    'OpenAI shape',
    '{"error":{"message":"\'max_tokens\' is too large: 9000.","type":"BadRequestError","param":"max_tokens","code":400}}',
    'max_output_tokens',
    "'max_tokens' is too large: 9000.",
  ],
  [
    "vLLM's older flat error",
    '{"object":"error","message":"Invalid JSON schema","type":"BadRequestError","param":"response_format.json_schema.schema","code":400}',
    'text.format.schema',
    'Invalid JSON schema',
  ],
  [
    'OpenAI shape, a field of the same name',
    '{"error":{"message":"temperature must be non-negative","type":"BadRequestError","param":"temperature","code":400}}',
    'temperature',
    'temperature must be non-negative',
  ],
] as const;

for (const [server, body, param, message] of RESPONSES_CASES) {
  test(`a backend's 400 of a Responses request in ${server}: the field is the one the client sent`, async () => {
    const gw = await gateway([await refusingBackend(body)], 'goodput');
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const refused = await client.responses
      .create({ model: MODEL, input: 'hi', max_output_tokens: 16, store: false })
      .then(
        () => undefined,
        (e: unknown) =>
          e as { status?: number; param?: string | null; error?: { message?: string } },
      );
    assert.equal(refused?.status, 400);
    assert.equal(refused.param, param);
    assert.equal(refused.error?.message, message);
  });
}

// A 4xx only a backend can be at fault for — its path or model (the gateway checked the
// client's), its own timeout, a misdirected request, its closing on the gateway — is no
// client's: tried on another backend before the first token, else a 502, and its breaker told.
for (const status of [404, 405, 408, 421, 499]) {
  test(`a backend's ${status} is its own fault: served by another backend, or a 502`, async () => {
    const refusing = await refusingBackend('<html><body>no</body></html>', status);
    const [healthy] = await engines(1);
    const both = await gateway([refusing, healthy], 'goodput');
    const client = new OpenAI({ baseURL: `${both.url}/v1`, apiKey: 'none', maxRetries: 0 });
    for (let i = 0; i < 4; i++) {
      const r = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: `hi ${i}` }],
        max_tokens: 2,
      });
      assert.equal(r.choices.length, 1);
    }
    const alone = await gateway([await refusingBackend('{}', status)], 'goodput');
    const res = await fetch(`${alone.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }),
    });
    assert.equal(res.status, 502);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'upstream_error');
    // Counted as the backend's failure, where an operator looks for one.
    const failures = { backend: 'backend-0', stage: 'before_first_token' };
    assert.ok((await metricValue(alone.url, 'goodput_upstream_failures_total', failures)) >= 1);
  });
}
