// The reference for gateway overhead: a bare streaming pass-through proxy on the same HTTP
// stack as the gateway (Hono on @hono/node-server, a keep-alive node:http agent upstream) — no
// auth, no policy, no metrics. Usage: node bench/bare-proxy.ts UPSTREAM_URL  (prints its URL)
import { Hono } from 'hono';
import { serve } from '@hono/node-server';
import { Agent, request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';

const upstream = process.argv[2]?.replace(/\/+$/, '');
if (upstream === undefined) throw new Error('usage: node bench/bare-proxy.ts UPSTREAM_URL');
const agent = new Agent({ keepAlive: true, maxSockets: Infinity });

const app = new Hono();
app.post('/v1/*', async (c) => {
  const body = await c.req.text();
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(upstream + c.req.path, {
      method: 'POST',
      agent,
      signal: c.req.raw.signal,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.once('response', resolve);
    req.once('error', reject);
    req.end(body);
  });
  return new Response(Readable.toWeb(res) as ReadableStream<Uint8Array>, {
    status: res.statusCode,
    headers: { 'content-type': res.headers['content-type'] ?? 'text/event-stream' },
  });
});
const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => {
  const { port } = server.address() as AddressInfo;
  console.log(`bare proxy at http://127.0.0.1:${port}`);
});
