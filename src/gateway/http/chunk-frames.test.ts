import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { chunkWriter, frame } from './chunk-frames.ts';

test('a chunk is its size in hex, CRLF, the bytes, CRLF', () => {
  assert.equal(frame(Buffer.from('data: x\n\n')).toString('latin1'), '9\r\ndata: x\n\n\r\n');
  const big = Buffer.alloc(300, 0x61);
  assert.equal(frame(big).toString('latin1'), `12c\r\n${'a'.repeat(300)}\r\n`);
});

/** Writes `parts` through a chunk writer and returns the raw bytes an `httpVersion` client read. */
async function rawAnswer(httpVersion: '1.0' | '1.1', parts: string[]): Promise<string> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunks = chunkWriter(res);
    for (const p of parts) chunks.write(Buffer.from(p));
    chunks.end();
  });
  server.listen(0, '127.0.0.1');
  await new Promise((ok) => server.once('listening', ok));
  const { port } = server.address() as AddressInfo;
  // Two requests on one connection for HTTP/1.1: the body's end must leave it reusable.
  const ask = `POST / HTTP/${httpVersion}\r\nhost: x\r\ncontent-length: 0\r\n\r\n`;
  const socket = connect(port, '127.0.0.1');
  socket.write(
    httpVersion === '1.1' ? ask + ask.replace('\r\n\r\n', '\r\nconnection: close\r\n\r\n') : ask,
  );
  let raw = '';
  socket.on('data', (d: Buffer) => (raw += d.toString('latin1')));
  await new Promise((ok) => socket.once('close', ok));
  server.close();
  return raw;
}

test('over HTTP/1.1: one chunk a write, the last chunk at the end, the connection kept', async () => {
  const raw = await rawAnswer('1.1', ['data: a\n\n', '', 'data: bc\n\n']);
  const answers = raw.split('HTTP/1.1 200 OK\r\n').slice(1);
  assert.equal(answers.length, 2, 'both requests answered on one connection');
  for (const a of answers) {
    assert.match(a, /transfer-encoding: chunked\r\n/i);
    assert.ok(a.endsWith('\r\n\r\n9\r\ndata: a\n\n\r\na\r\ndata: bc\n\n\r\n0\r\n\r\n'), a);
  }
});

test('over HTTP/1.0: the bytes as they are, the body ended by the connection', async () => {
  const raw = await rawAnswer('1.0', ['data: a\n\n', 'data: bc\n\n']);
  assert.doesNotMatch(raw, /transfer-encoding/i);
  assert.ok(raw.endsWith('\r\n\r\ndata: a\n\ndata: bc\n\n'), raw);
});
