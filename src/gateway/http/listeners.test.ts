// The gateway's listening sockets, for real on loopback: several share the port and every
// connection is answered, whichever took it; a port another process holds is refused, and so is
// a second gateway on the same port (SO_REUSEPORT would otherwise let it share in silence);
// closing frees the port.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError } from '../../core/errors.ts';
import { SILENT_OPS_LOG } from '../ops-log.ts';
import { LISTENERS, Listeners, listen } from './listeners.ts';

const deps = { log: SILENT_OPS_LOG, refuseUnparsed: () => 'unparsed' };
const hello = (_req: unknown, res: import('node:http').ServerResponse) => res.end('ok');

/** One GET on a new connection; resolves with the body. */
function get(port: number): Promise<string> {
  return new Promise((ok, fail) => {
    const req = request({ port, host: '127.0.0.1', path: '/', agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => ok(body));
    });
    req.on('error', fail);
    req.end();
  });
}

test('on Linux, several sockets share the port, and every connection is answered', async () => {
  assert.equal(LISTENERS, process.platform === 'linux' ? 32 : 1);
  const listeners = await listen(hello, '127.0.0.1', 0, deps);
  try {
    assert.ok(listeners.port > 0);
    const answers = await Promise.all(Array.from({ length: 200 }, () => get(listeners.port)));
    assert.deepEqual(new Set(answers), new Set(['ok']));
  } finally {
    await listeners.close();
  }
});

test('a port another process holds is a ConfigError naming --port', async () => {
  const busy = createServer();
  await new Promise<void>((ok) => busy.listen(0, '127.0.0.1', ok));
  const { port } = busy.address() as AddressInfo;
  try {
    await assert.rejects(listen(hello, '127.0.0.1', port, deps), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.match(e.message, /--port: expected a free port, got \d+/);
      return true;
    });
  } finally {
    busy.close();
  }
});

test('a second gateway on the same port is refused, not let share it', async () => {
  const first = await listen(hello, '127.0.0.1', 0, deps);
  try {
    const second = await listen(hello, '127.0.0.1', first.port, deps).catch((e: unknown) => e);
    if (second instanceof Listeners) await second.close();
    assert.ok(second instanceof ConfigError, 'the second is refused');
    assert.equal(await get(first.port), 'ok', 'the first serves on');
  } finally {
    await first.close();
  }
  // Closed: the port is free again, for every socket.
  const again = await listen(hello, '127.0.0.1', first.port, deps);
  assert.equal(again.port, first.port);
  assert.equal(await get(again.port), 'ok');
  await again.close();
});
