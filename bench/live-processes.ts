// What the live benches share: `goodput engine` and `goodput serve` started as processes on free
// ports, a throwaway redis-server, and a counter read from a Prometheus exposition.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createClient } from 'redis';
import { REPO_ROOT } from './bench-args.ts';

/**
 * Runs `goodput ARGS` on a free port — of the checkout at `root`, this one by default; resolves
 * with its base URL once it prints it.
 */
export async function startGoodput(
  args: string[],
  root = REPO_ROOT,
): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['bin/goodput.js', ...args, '--port', '0'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((ok, fail) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /(?:serving \S+|OpenAI API) at (http[^\s"]+?)\/v1/.exec(out);
      if (m) ok(m[1]);
    });
    child.once('exit', (code) => fail(new Error(`goodput ${args[0]} exited ${code}: ${out}`)));
  });
  return { url, child };
}

/** A metric's value, summed over its series whose labels include `labels`. */
export function metric(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) {
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return sum;
}

/** A redis-server of its own on a free port, no persistence: its URL, a client, its stop, its pid. */
export async function startRedisServer() {
  if (spawnSync('redis-server', ['--version']).status !== 0) {
    throw new Error('redis-server: not on PATH (apt-get install redis-server)');
  }
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const url = `redis://127.0.0.1:${port}`;
  const client = createClient({ url });
  for (let i = 0; ; i++) {
    try {
      await client.connect();
      break;
    } catch (e) {
      if (i > 50) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const stop = async () => {
    await client.quit();
    child.kill('SIGKILL');
  };
  return { url, client, stop, pid: child.pid as number };
}
