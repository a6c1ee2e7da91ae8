// The reference for gateway overhead: a bare streaming pass-through proxy on the same HTTP
// stack as the gateway (Hono on @hono/node-server, a keep-alive node:http agent upstream, the
// answer piped into Node's response as the gateway writes its streams) — no auth, no policy,
// no metrics. `--web-stream` answers with a web Response instead, as a Hono handler commonly
// does. Usage: node bench/bare-proxy.ts UPSTREAM_URL [--web-stream]  (prints its URL)
import { Hono } from 'hono';
import { serve, type HttpBindings } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Agent, request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';

const upstream = process.argv[2]?.replace(/\/+$/, '');
if (upstream === undefined) throw new Error('usage: node bench/bare-proxy.ts UPSTREAM_URL');
const agent = new Agent({ keepAlive: true, maxSockets: Infinity });

const webStream = process.argv.includes('--web-stream');
const app = new Hono<{ Bindings: HttpBindings }>();
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
  const status = res.statusCode ?? 502;
  const headers = { 'content-type': res.headers['content-type'] ?? 'text/event-stream' };
  if (webStream) {
    return new Response(Readable.toWeb(res) as ReadableStream<Uint8Array>, { status, headers });
  }
  c.env.outgoing.writeHead(status, headers);
  res.pipe(c.env.outgoing);
  return RESPONSE_ALREADY_SENT;
});
const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => {
  const { port } = server.address() as AddressInfo;
  console.log(`bare proxy at http://127.0.0.1:${port}`);
});
