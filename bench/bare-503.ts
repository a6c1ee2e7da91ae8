// The floor for bench/refusal-rate.ts: plain node:http that reads each request's body and
// answers 503 at once, with a small OpenAI-style error and `Retry-After: 1`: what a refusal
// costs on this runtime before any routing, validation, policy or metrics. The answer is built
// once; each request costs Node's parser, the body's chunks and one write.
// Usage: node bench/bare-503.ts [--port N]  (prints its URL)
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { flag } from './bench-args.ts';

const body = Buffer.from(
  JSON.stringify({
    error: {
      message: 'the service is at capacity',
      type: 'server_error',
      param: null,
      code: 'service_capacity',
    },
  }),
);
const headers = {
  'content-type': 'application/json',
  'retry-after': '1',
  'content-length': String(body.length),
};

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    res.writeHead(503, headers);
    res.end(body);
  });
});
// Exits through process.exit, so a `--cpu-prof` profile is written when the bench stops it.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));
server.listen(Number(flag('--port') ?? '0'), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  console.log(`bare 503 at http://127.0.0.1:${port}`);
});
