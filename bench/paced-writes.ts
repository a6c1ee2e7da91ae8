// What a reader that never reads costs the process that writes to it, with and without waiting
// for 'drain' between pages: the way the gateway writes a kept response's event log to
// `GET /v1/responses/{id}?stream=true` (http/stream-readers.ts, a page of 500 events at a
// time). 300 clients whose sockets are paused each ask for a 1 MB log of 4,000 events; the
// writing process's memory 5 s later.
//   node bench/paced-writes.ts unpaced | paced
import { createServer, type ServerResponse } from 'node:http';
import { connect } from 'node:net';

const paced = process.argv[2] === 'paced';
const event = `event: response.output_text.delta\ndata: ${'x'.repeat(230)}\n\n`;
const page = Array.from({ length: 500 }, () => event);

async function send(res: ServerResponse): Promise<void> {
  for (let p = 0; p < 8; p++) {
    for (const e of page) res.write(e);
    if (paced && res.writableNeedDrain) await new Promise((r) => res.once('drain', r));
  }
}

const server = createServer((_req, res) => {
  res.writeHead(200);
  void send(res);
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const port = (server.address() as { port: number }).port;
const before = process.memoryUsage();
const sockets = Array.from({ length: 300 }, () => {
  const s = connect({ port, host: '127.0.0.1' });
  s.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  s.pause();
  return s;
});
await new Promise((r) => setTimeout(r, 5000));
const after = process.memoryUsage();
const mb = (n: number) => Math.round(n / 1048576);
console.log(
  `${paced ? 'paced' : 'unpaced'}: rss +${mb(after.rss - before.rss)} MB, heap +${mb(after.heapUsed - before.heapUsed)} MB`,
);
for (const s of sockets) s.destroy();
server.close();
