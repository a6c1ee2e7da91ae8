// The server side of bench/loadgen-ceiling.ts: plain node:http that reads each request's body and
// answers at once with a two-token completion stream, usage and [DONE] — the least a streaming
// server can do, so what limits the rate is the load generator.
// Usage: node bench/bare-stream.ts [--port N]  (prints its URL)
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { flag } from './bench-args.ts';

const chunk = (text: string) =>
  `data: ${JSON.stringify({ id: 'c', object: 'text_completion', choices: [{ index: 0, text }] })}\n\n`;
const stream = Buffer.from(
  chunk('a') +
    chunk('b') +
    `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 8, completion_tokens: 2 } })}\n\n` +
    'data: [DONE]\n\n',
);
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-length': stream.length });
    res.end(stream);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(flag('--port') ?? '0'), '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
