// Real `goodput` processes for the process-level suites: spawned with the Node that runs the
// tests, their output kept (stdout's JSON lines parsed), their URL read from what they print,
// and SIGKILLed when the file's tests end if still alive. Waits poll on the wall clock with
// small intervals and generous ceilings, and a failure quotes the process's output.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { after } from 'node:test';
import OpenAI from 'openai';
import { PRESETS } from '../../src/core/config/presets.ts';

export interface GoodputProcess {
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  /** Everything it wrote so far, stdout and stderr interleaved. */
  output(): string;
  /** Its stdout lines so far that parse as JSON objects. */
  jsonLines(): Record<string, unknown>[];
  /** Its stdout lines so far that do not: operational lines should all be JSON. */
  otherLines(): string[];
  /** Resolves when it exits: its code, or the signal that ended it. */
  readonly exited: Promise<{ readonly code: number | null; readonly signal: string | null }>;
}

export function spawnGoodput(args: readonly string[]): GoodputProcess {
  const child = spawn(process.execPath, ['bin/goodput.js', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let stdout = '';
  child.stdout.on('data', (d) => {
    out += String(d);
    stdout += String(d);
  });
  child.stderr.on('data', (d) => (out += String(d)));
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const lines = () => stdout.split('\n').filter((l) => l.trim() !== '');
  const parsed = (l: string): Record<string, unknown> | undefined => {
    try {
      const v: unknown = JSON.parse(l);
      return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  };
  after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return {
    child,
    output: () => out,
    jsonLines: () =>
      lines()
        .map(parsed)
        .filter((l): l is Record<string, unknown> => l !== undefined),
    otherLines: () => lines().filter((l) => parsed(l) === undefined),
    exited,
  };
}

/** Polls `check` every `everyMs` until it holds; fails with `what` after `withinMs`. */
export async function until(
  what: string,
  check: () => Promise<boolean> | boolean,
  withinMs = 10_000,
  everyMs = 10,
): Promise<void> {
  const end = performance.now() + withinMs;
  for (;;) {
    if (await check()) return;
    if (performance.now() > end) throw new Error(`${what}: not within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The URL `pattern` (its first group) finds in `p`'s output, once it prints it. */
export async function printedUrl(
  p: GoodputProcess,
  pattern: RegExp,
  withinMs = 15_000,
): Promise<string> {
  await until(
    `${p.child.spawnargs.slice(1, 3).join(' ')} printing its URL`,
    () => pattern.test(p.output()) || p.child.exitCode !== null,
    withinMs,
  ).catch((e: Error) => {
    throw new Error(`${e.message}\n${p.output()}`);
  });
  const url = pattern.exec(p.output())?.[1];
  if (url === undefined) throw new Error(`it exited before listening:\n${p.output()}`);
  return url;
}

/** `goodput engine` on a free port; resolves with its root URL (no `/v1`). */
export async function startEngine(args: readonly string[]): Promise<string> {
  const p = spawnGoodput(['engine', '--port', '0', ...args]);
  return await printedUrl(p, /serving \S+ at (http\S+?)\/v1/);
}

/**
 * `goodput serve` on a free port; resolves once it listens, with its root URL (no `/v1`). With
 * no `--policy` in `args`, under `goodputWithoutShedding()`: a test names the policy it tests.
 */
export async function startServe(
  args: readonly string[],
): Promise<{ readonly url: string; readonly proc: GoodputProcess }> {
  const policy = args.includes('--policy') ? [] : ['--policy', goodputWithoutShedding()];
  const proc = spawnGoodput(['serve', '--port', '0', ...policy, ...args]);
  const url = await printedUrl(proc, /OpenAI API at (http[^\s"]+?)\/v1/);
  return { url, proc };
}

/**
 * A policy file: the `goodput` preset with its lag shedder off. Two test files share two cores,
 * so a gateway's event loop can run 50 ms late for want of CPU alone and shed (503
 * `gateway_overloaded`, as it should): a suite that tests something else runs this policy, as
 * the in-process gateways of `gateway-kit.ts` run with `shedLagMs: 0`. One file per test file.
 */
export function goodputWithoutShedding(): string {
  if (noShedFile !== undefined) return noShedFile;
  const file = join(mkdtempSync(join(tmpdir(), 'goodput-policy-')), 'goodput-no-shed.json');
  const policy = {
    ...PRESETS.goodput,
    name: 'goodput-no-shed',
    policy_revision: 'goodput-no-shed@1',
    resilience: { shed_lag_ms: 0 },
  };
  writeFileSync(file, JSON.stringify(policy));
  return (noShedFile = file);
}
let noShedFile: string | undefined;

/** Runs `goodput ARGS` to its end; resolves with its exit code and everything it printed. */
export function runGoodput(args: readonly string[]): Promise<{ code: number | null; out: string }> {
  const p = spawnGoodput(args);
  return p.exited.then(({ code }) => ({ code, out: p.output() }));
}

/**
 * `goodput serve FLAG VALUE` for each of `cases` exits 2 before it listens, saying the flag
 * expected what `says` and got the value.
 */
export async function serveRefuses(cases: readonly (readonly [string, string, string])[]) {
  for (const [flag, value, says] of cases) {
    const run = await runGoodput(['serve', '--port', '0', flag, value]);
    assert.equal(run.code, 2, run.out);
    assert.match(run.out, new RegExp(`${flag}: expected ${says}, got "${value}"`));
  }
}

/**
 * Two `goodput serve` replicas sharing the Redis at `redisUrl`, in front of one `goodput
 * engine`, as the Responses API's clients reach them (the `openai` client of each). B drains
 * for at most a second. `close` stops A (B is the test's to stop).
 */
export async function replicasThroughRedis(redisUrl: string) {
  const engine = await startEngine([]);
  const args = ['--backend', engine, '--redis', redisUrl, '--gateway-replicas', '2'];
  const [a, b] = [await startServe(args), await startServe([...args, '--drain-timeout', '1'])];
  const client = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none' });
  return {
    a: { ...a, client: client(a.url) },
    b: { ...b, client: client(b.url) },
    close: async () => {
      a.proc.child.kill('SIGTERM');
      await a.proc.exited;
    },
  };
}
