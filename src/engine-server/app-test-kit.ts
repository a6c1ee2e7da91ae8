/**
 * Helpers for the engine server's in-process tests (not a test file itself): servers on a fast
 * constant-step profile that the suite closes at the end, JSON posts, and an assertion on the
 * OpenAI error body.
 */
import { after } from 'node:test';
import assert from 'node:assert/strict';
import { createEngineServer, type EngineServer, type EngineServerOptions } from './engine-app.ts';

export const MODEL = 'llama-3-8b';
export const CHAT = '/v1/chat/completions';
export const TEXT = '/v1/completions';

const servers: EngineServer[] = [];

/** A server on a 2 ms constant step; closed when the calling suite ends. */
export function testServer(opts: EngineServerOptions = {}): EngineServer {
  if (servers.length === 0) after(() => servers.splice(0).forEach((s) => s.close()));
  const s = createEngineServer({ profile: 'const:step_ms=2', seed: 3, ...opts });
  servers.push(s);
  return s;
}

export const user = (content: string) => [{ role: 'user', content }];

export function post(
  s: EngineServer,
  path: string,
  body: unknown,
  init: RequestInit = {},
): Promise<Response> {
  return Promise.resolve(
    s.app.request(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
      ...init,
    }),
  );
}

/** Asserts the status and OpenAI's error shape; returns the error object. */
export async function expectError(
  res: Response,
  status: number,
  message: RegExp,
  param?: string | null,
): Promise<Record<string, unknown>> {
  assert.equal(res.status, status);
  const body = (await res.json()) as { error: Record<string, unknown> };
  assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
  assert.match(String(body.error.message), message);
  if (param !== undefined) assert.equal(body.error.param, param);
  return body.error;
}
