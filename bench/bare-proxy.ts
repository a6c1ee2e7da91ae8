// The reference for gateway overhead: a bare streaming pass-through proxy on the same HTTP
// stack as the gateway (Hono on @hono/node-server, Node's fetch upstream) — no auth, no
// policy, no metrics. Usage: node bench/bare-proxy.ts UPSTREAM_URL  (prints its URL)
import { Hono } from 'hono';
import { serve } from '@hono/node-server';
import type { AddressInfo } from 'node:net';

const upstream = process.argv[2]?.replace(/\/+$/, '');
if (upstream === undefined) throw new Error('usage: node bench/bare-proxy.ts UPSTREAM_URL');

const app = new Hono();
app.post('/v1/*', async (c) => {
  const res = await fetch(upstream + c.req.path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: await c.req.text(),
    signal: c.req.raw.signal,
  });
  return new Response(res.body, { status: res.status, headers: res.headers });
});
const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => {
  const { port } = server.address() as AddressInfo;
  console.log(`bare proxy at http://127.0.0.1:${port}`);
});
