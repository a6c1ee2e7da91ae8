// What the live benches share: `goodput engine` and `goodput serve` started as processes on free
// ports, and a counter read from a Prometheus exposition.
import { spawn, type ChildProcess } from 'node:child_process';
import { REPO_ROOT } from './bench-args.ts';

/** Runs `goodput ARGS` on a free port; resolves with its base URL once it prints it. */
export async function startGoodput(args: string[]): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['bin/goodput.js', ...args, '--port', '0'], {
    cwd: REPO_ROOT,
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
