// HttpBackend staging a prompt against a scripted upstream over real HTTP: the leading pieces go
// first, one request each, unstreamed; a piece the upstream refuses ends the staging and the
// request itself is still sent whole; a client gone while a piece is in flight stops there.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpBackend } from '../../src/gateway/http-backend.ts';
import type { UpstreamCall } from '../../src/gateway/backend.ts';
import { wallClock } from '../../src/runtime/wall-clock.ts';
import { wallTimers } from '../../src/runtime/wall-timers.ts';

/** What the upstream does with a piece (a request not streamed). */
let pieces: 'answer' | 'refuse' | 'hang' = 'answer';
/** Each request it read: its X-Request-Id and whether it asked for a stream. */
const seen: { id: string; stream: boolean }[] = [];
const server = createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on('data', (b: Buffer) => parts.push(b));
  req.on('end', () => {
    if (req.method !== 'POST') return res.end('');
    const body = JSON.parse(Buffer.concat(parts).toString()) as { stream: boolean };
    seen.push({ id: String(req.headers['x-request-id']), stream: body.stream });
    if (!body.stream) {
      if (pieces === 'hang') return;
      if (pieces === 'refuse') return res.writeHead(400).end('{"error":"no"}');
      return res.end('{"choices":[{"index":0,"message":{"content":"x"}}]}');
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = { id: 'chatcmpl-r1', choices: [{ index: 0, delta: { content: 'a' } }] };
    res.end(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`);
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const backend = new HttpBackend({ name: 'b0', url, clock: wallClock, timers: wallTimers() });
after(async () => {
  await backend.close();
  server.closeAllConnections();
  server.close();
});

/** A 1,007-token chat in pieces of 256: three pieces before the request itself. */
const call = (signal: AbortSignal): UpstreamCall => ({
  id: 'r1',
  kind: 'chat',
  body: { model: 'm', messages: [{ role: 'user', content: 'abcd'.repeat(1_000) }] },
  signal,
  staged: { pieceTokens: 256, cachedTokens: 0, promptTokens: 1_007 },
});

test('the pieces go first, one at a time and unstreamed, then the request streams', async () => {
  seen.length = 0;
  pieces = 'answer';
  const end = await backend.stream(call(new AbortController().signal), () => {});
  assert.equal(end.finishReason, 'stop');
  assert.deepEqual(seen, [
    { id: 'r1-piece-1', stream: false },
    { id: 'r1-piece-2', stream: false },
    { id: 'r1-piece-3', stream: false },
    { id: 'r1', stream: true },
  ]);
});

test('a piece refused ends the staging: the request still goes, whole', async () => {
  seen.length = 0;
  pieces = 'refuse';
  const tokens: string[] = [];
  await backend.stream(call(new AbortController().signal), (t) => tokens.push(t.text));
  assert.deepEqual(tokens, ['a']);
  assert.deepEqual(seen, [
    { id: 'r1-piece-1', stream: false },
    { id: 'r1', stream: true },
  ]);
});

test('a client gone while a piece is in flight: nothing more is sent', async () => {
  seen.length = 0;
  pieces = 'hang';
  const abort = new AbortController();
  const streaming = backend.stream(call(abort.signal), () => {});
  while (seen.length === 0) await new Promise((r) => setTimeout(r, 5));
  abort.abort(new Error('client closed'));
  await assert.rejects(streaming);
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(seen, [{ id: 'r1-piece-1', stream: false }]);
});
