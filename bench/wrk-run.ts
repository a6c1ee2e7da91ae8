// Runs wrk with bench/wrk-chat.lua and reads the one `wrk-json` line that script prints at the
// end (totals, error counts, latency quantile points), and pools several runs: rates from the
// summed requests over the summed durations, latency percentiles from the runs' quantile
// points weighted by each run's requests — so a pooled p99 is the mixture's, not an average of
// p99s. wrk counts a response with status ≥ 400 as a `status` error; the others are sockets:
// connect, read, write, and `timeout` (no response within --timeout). A machine without wrk
// gets Debian's at the first run.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { REPO_ROOT } from './bench-args.ts';

export interface WrkErrors {
  readonly connect: number;
  readonly read: number;
  readonly write: number;
  /** Responses with status ≥ 400: here, the refusals. */
  readonly status: number;
  readonly timeout: number;
}

export interface WrkResult {
  readonly duration_us: number;
  /** Responses received (any status). */
  readonly requests: number;
  readonly bytes: number;
  readonly errors: WrkErrors;
  /** `q`: [percentile, mass in percent, latency µs], ascending. */
  readonly latency: {
    min: number;
    max: number;
    mean: number;
    q: readonly (readonly [number, number, number])[];
  };
  /** With `outcomes`: responses as the client saw them (see bench/wrk-chat.lua). */
  readonly outcomes?: { completed: number; cut: number; refused: number; other: number };
}

export interface WrkOptions {
  readonly url: string;
  readonly threads: number;
  readonly connections: number;
  readonly durationS: number;
  readonly timeoutS: number;
  /** Extra request headers, `name: value`. */
  readonly headers: readonly string[];
  /** `taskset -c` list for wrk, or undefined to leave it unpinned. */
  readonly cores?: string;
  /** Judge every response (200 completed or cut, refused, other): slower, so only when asked. */
  readonly outcomes?: boolean;
  /** The model the body asks for (default llama-3-8b). */
  readonly model?: string;
  /** Told the child while it runs, so the caller can stop it however the run ends. */
  readonly onSpawn?: (proc: ChildProcess) => void;
}

export const WRK_SCRIPT = resolve(REPO_ROOT, 'bench/wrk-chat.lua');

/** Installs Debian's wrk when this machine lacks it (scripts/apt-install.sh), once a process. */
let wrkChecked = false;
function ensureWrk(): void {
  if (wrkChecked) return;
  const has = spawnSync('sh', ['-c', 'command -v wrk'], { stdio: 'ignore' }).status === 0;
  if (!has) {
    const script = resolve(REPO_ROOT, 'scripts/apt-install.sh');
    const r = spawnSync('bash', [script, 'wrk'], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`wrk is not installed, and ${script} wrk failed`);
  }
  wrkChecked = true;
}

export function runWrk(o: WrkOptions): Promise<WrkResult> {
  ensureWrk();
  const args = [
    ...['-t', String(o.threads), '-c', String(o.connections)],
    ...['-d', `${o.durationS}s`, '--timeout', `${o.timeoutS}s`, '-s', WRK_SCRIPT],
    ...o.headers.flatMap((h) => ['-H', h]),
    o.url,
  ];
  const [file, argv] =
    o.cores === undefined ? ['wrk', args] : ['taskset', ['-c', o.cores, 'wrk', ...args]];
  const env = {
    ...process.env,
    ...(o.outcomes === true ? { GOODPUT_WRK_OUTCOMES: '1' } : {}),
    ...(o.model === undefined ? {} : { GOODPUT_WRK_MODEL: o.model }),
  };
  const proc = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], env });
  o.onSpawn?.(proc);
  let out = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((ok, fail) => {
    proc.once('error', fail);
    proc.once('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('wrk-json '));
      if (code !== 0 || line === undefined) {
        fail(new Error(`wrk ${argv.join(' ')} exited ${code}:\n${out}`));
      } else {
        ok(JSON.parse(line.slice('wrk-json '.length)) as WrkResult);
      }
    });
  });
}

export interface Pooled {
  readonly requests: number;
  readonly durationS: number;
  /** Responses per second, any status. */
  readonly rate: number;
  readonly errors: WrkErrors;
  /** Latency percentiles in ms. */
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

export function pool(runs: readonly WrkResult[]): Pooled {
  const requests = sum(runs.map((r) => r.requests));
  const durationS = sum(runs.map((r) => r.duration_us)) / 1e6;
  const err = (k: keyof WrkErrors) => sum(runs.map((r) => r.errors[k]));
  return {
    requests,
    durationS,
    rate: requests / durationS,
    errors: {
      connect: err('connect'),
      read: err('read'),
      write: err('write'),
      status: err('status'),
      timeout: err('timeout'),
    },
    p50: pooledPercentile(runs, 50) / 1000,
    p99: pooledPercentile(runs, 99) / 1000,
    max: Math.max(...runs.map((r) => r.latency.max)) / 1000,
  };
}

/** The latency (µs) below which `p`% of all the runs' responses fall, from their points. */
export function pooledPercentile(runs: readonly WrkResult[], p: number): number {
  const points = runs
    .filter((r) => r.requests > 0)
    .flatMap((r) => r.latency.q.map(([, mass, us]) => [us, (mass / 100) * r.requests] as const))
    .sort((a, b) => a[0] - b[0]);
  const target = (p / 100) * sum(points.map(([, w]) => w));
  let seen = 0;
  for (const [us, w] of points) {
    seen += w;
    if (seen >= target - 1e-9) return us;
  }
  return NaN;
}

const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
