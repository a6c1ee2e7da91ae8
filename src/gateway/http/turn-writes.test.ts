import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request, type IncomingMessage } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { TurnWrites } from './turn-writes.ts';

/** A socket that counts its corks, as net.Socket keeps them. */
function fakeSocket() {
  const s = { corked: 0, flushes: 0 };
  const socket = {
    cork: () => void s.corked++,
    uncork: () => {
      if (s.corked > 0 && --s.corked === 0) s.flushes++;
    },
  } as unknown as Socket;
  return { s, socket };
}

test('each socket is corked once a turn, and every one is uncorked by the one flush', () => {
  const flushes: (() => void)[] = [];
  const writes = new TurnWrites((f) => flushes.push(f));
  const a = fakeSocket();
  const b = fakeSocket();
  writes.hold(a.socket);
  writes.hold(a.socket);
  writes.hold(b.socket);
  writes.hold(null);
  assert.equal(flushes.length, 1, 'one flush scheduled for the turn');
  assert.deepEqual([a.s.corked, b.s.corked], [1, 1]);
  flushes[0]();
  assert.deepEqual(
    [a.s, b.s],
    [
      { corked: 0, flushes: 1 },
      { corked: 0, flushes: 1 },
    ],
  );
  writes.hold(a.socket);
  assert.equal(flushes.length, 2, 'the next turn schedules its own');
  flushes[1]();
  assert.equal(a.s.flushes, 2);
});

test('through Node: held writes go out at the end of the turn, in order, and end() sends the rest', async () => {
  const writes = new TurnWrites();
  const corked: number[] = [];
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('first;');
    writes.hold(res.socket);
    res.write('second;');
    res.write('third;');
    // Node uncorks its own cork on the next tick: the hold keeps the socket corked past it, to
    // the end of the turn; the flush, scheduled first, has run by the next immediate.
    process.nextTick(() => corked.push(res.socket?.writableCorked ?? -1));
    setImmediate(() => {
      corked.push(res.socket?.writableCorked ?? -1);
      res.end('last');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const req = request({ port, host: '127.0.0.1', path: '/' });
  req.end();
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  const chunks: string[] = [];
  for await (const c of res) chunks.push(String(c));
  server.close();
  assert.equal(corked[0], 1, 'corked for the rest of the turn');
  assert.equal(corked[1], 0, 'uncorked at its end');
  assert.equal(chunks.join(''), 'first;second;third;last');
});

test('reads held to the turn end run in order, before the sockets they write to are uncorked', () => {
  const flushes: (() => void)[] = [];
  const writes = new TurnWrites((f) => flushes.push(f));
  const a = fakeSocket();
  const seen: string[] = [];
  writes.readLater(() => {
    seen.push(`read 1, corked ${a.s.corked}`);
    writes.hold(a.socket);
  });
  writes.readLater(() => seen.push(`read 2, corked ${a.s.corked}`));
  assert.equal(flushes.length, 1, 'one flush for reads and writes');
  assert.equal(seen.length, 0, 'nothing read before the turn ends');
  flushes[0]();
  assert.deepEqual(seen, ['read 1, corked 0', 'read 2, corked 1']);
  assert.deepEqual(
    a.s,
    { corked: 0, flushes: 1 },
    'the hold a read made went out in the same flush',
  );
  writes.readLater(() => seen.push('read 3'));
  assert.equal(flushes.length, 2, 'the next turn schedules its own');
});

test('a read that throws stops neither the other reads nor the turn’s writes, and is thrown after them', () => {
  const flushes: (() => void)[] = [];
  const writes = new TurnWrites((f) => flushes.push(f));
  const a = fakeSocket();
  let after = false;
  writes.hold(a.socket);
  writes.readLater(() => {
    throw new Error('a read that broke its promise');
  });
  writes.readLater(() => (after = true));
  assert.throws(() => flushes[0](), /broke its promise/);
  assert.equal(after, true, 'the next read still ran');
  assert.deepEqual(a.s, { corked: 0, flushes: 1 });
  writes.hold(a.socket);
  assert.equal(flushes.length, 2, 'the next turn still flushes');
});

test('a hold’s sent is called right after its own socket is uncorked, with the time then; its errors rethrown last', () => {
  const flushes: (() => void)[] = [];
  let now = 0;
  const writes = new TurnWrites(
    (f) => flushes.push(f),
    () => now,
  );
  const a = fakeSocket();
  const b = fakeSocket();
  const seen: string[] = [];
  // Each uncork takes 5 ms of the clock here.
  const slow = (x: ReturnType<typeof fakeSocket>) => {
    const uncork = x.socket.uncork.bind(x.socket);
    x.socket.uncork = () => {
      now += 5;
      uncork();
    };
  };
  slow(a);
  slow(b);
  writes.hold(a.socket, (ms) =>
    seen.push(`a at ${ms}, a out ${a.s.flushes}, b out ${b.s.flushes}`),
  );
  writes.hold(b.socket, () => {
    throw new Error('a meter that broke');
  });
  writes.hold(b.socket, (ms) => seen.push(`b again at ${ms}`));
  writes.hold(null, (ms) => seen.push(`no socket: now, at ${ms}`));
  assert.deepEqual(seen, ['no socket: now, at 0']);
  assert.equal(flushes.length, 1, 'one flush for the turn');
  assert.throws(() => flushes[0](), /a meter that broke/);
  assert.deepEqual(seen, ['no socket: now, at 0', 'a at 5, a out 1, b out 0', 'b again at 10']);
  writes.hold(a.socket, (ms) => seen.push(`next turn at ${ms}`));
  assert.equal(flushes.length, 2, 'the next turn schedules its own');
  flushes[1]();
  assert.equal(seen.at(-1), 'next turn at 15');
});

test('held writes go out mid-turn once they have waited 4 ms, and the turn’s end sends the rest', () => {
  const flushes: (() => void)[] = [];
  let now = 100;
  const writes = new TurnWrites(
    (f) => flushes.push(f),
    () => now,
  );
  const a = fakeSocket();
  const b = fakeSocket();
  const sent: string[] = [];
  const reads: string[] = [];
  writes.hold(a.socket, (ms) => sent.push(`a at ${ms}`));
  writes.readLater(() => reads.push('read'));
  now = 103;
  writes.flushIfLate();
  assert.deepEqual([a.s.corked, sent, reads], [1, [], []], '3 ms: still held');
  now = 104;
  writes.flushIfLate();
  assert.deepEqual([a.s, sent, reads], [{ corked: 0, flushes: 1 }, ['a at 104'], ['read']]);
  // Held again in the same turn: corked again, and out with the turn's one scheduled flush.
  writes.hold(a.socket);
  writes.hold(b.socket, (ms) => sent.push(`b at ${ms}`));
  assert.equal(a.s.corked, 1);
  writes.flushIfLate();
  assert.equal(b.s.corked, 1, 'b has not waited');
  assert.equal(flushes.length, 1, 'one flush scheduled for the turn');
  now = 106;
  flushes[0]();
  assert.deepEqual([a.s.flushes, b.s.flushes, sent], [2, 1, ['a at 104', 'b at 106']]);
  writes.flushIfLate();
  assert.equal(sent.length, 2, 'nothing held: nothing to do');
});

test('an error from a mid-turn flush is thrown from a turn of its own, not into the caller', () => {
  let now = 0;
  const turns: (() => void)[] = [];
  const writes = new TurnWrites(
    (f) => turns.push(f),
    () => now,
  );
  const a = fakeSocket();
  writes.hold(a.socket, () => {
    throw new Error('sent failed');
  });
  now = 10;
  assert.doesNotThrow(() => writes.flushIfLate());
  assert.equal(a.s.flushes, 1, 'the write went out');
  assert.equal(turns.length, 2, 'the turn’s flush, and the error’s own');
  assert.doesNotThrow(() => turns[0](), 'the turn’s flush: nothing left');
  assert.throws(() => turns[1](), /sent failed/);
});
