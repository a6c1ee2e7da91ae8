// A real, throwaway redis-server for the shared-state suites: on a free port, no persistence,
// killed when the file's tests end. Missing redis-server is a failure that says what to install
// (CI's .ci/run installs it), never a silent skip.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, connect } from 'node:net';
import { after } from 'node:test';

export interface RedisUnderTest {
  readonly port: number;
  readonly url: string;
  /** Kills the server (SIGKILL: a crash, not a shutdown). */
  kill(): Promise<void>;
  /** Starts a fresh, empty server on the same port. */
  restart(): Promise<void>;
  /** Sends the server `signal`: SIGSTOP stalls it whole (connections, reads and all), SIGCONT resumes it. */
  signal(signal: NodeJS.Signals): void;
}

export function requireRedisServer(): void {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) {
    throw new Error(
      'redis-server is not installed (or not on PATH): the shared-state tests need a real Redis. ' +
        'Install it — `apt-get install -y redis-server` (CI: .ci/run does) — and run the tests again.',
    );
  }
}

export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function accepts(port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.write('PING\r\n');
    });
    sock.once('data', (d) => {
      sock.destroy();
      resolve(d.toString().startsWith('+PONG'));
    });
    sock.once('error', () => resolve(false));
  });
}

export async function startRedis(): Promise<RedisUnderTest> {
  requireRedisServer();
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    for (let i = 0; i < 400; i++) {
      if (await accepts(port)) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`redis-server did not start on port ${port}`);
  };
  const kill = async () => {
    const c = child;
    child = null;
    if (c === null || c.exitCode !== null) return;
    await new Promise((resolve) => {
      c.once('exit', resolve);
      c.kill('SIGKILL');
    });
  };
  await start();
  after(kill);
  const signal = (sig: NodeJS.Signals) => void (child as ChildProcess | null)?.kill(sig);
  return { port, url: `redis://127.0.0.1:${port}`, kill, restart: start, signal };
}
