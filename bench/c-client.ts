// Runs bench/stream-client.c, the C streaming client, and reads its outcomes. The binary is built
// with the machine's gcc into node_modules/.cache, once per version of the source (its hash names
// the file), so a fresh clone needs nothing but a C compiler, which these machines have.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from './bench-args.ts';
import type { Outcome } from './stream-client.ts';

const SOURCE = join(REPO_ROOT, 'bench/stream-client.c');

/** The client's path, compiled first if this version of the source has not been. */
export function cClientBinary(): string {
  const source = readFileSync(SOURCE);
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 12);
  const dir = join(REPO_ROOT, 'node_modules/.cache/goodput-bench');
  const binary = join(dir, `stream-client-${hash}`);
  if (!existsSync(binary)) {
    mkdirSync(dir, { recursive: true });
    execFileSync('gcc', ['-O2', '-Wall', '-o', binary, SOURCE], { stdio: 'inherit' });
  }
  return binary;
}

/** An outcome with what the C client also times. */
export interface CClientOutcome extends Outcome {
  /** When it was due, ms from the client's start. */
  readonly dueMs: number;
  /** How long its new connection took to be established; null on one already open. */
  readonly connectMs: number | null;
  /** Which of the bodies it POSTed (`runCClient`), from 0. */
  readonly body: number;
}

/** One line of the client's output: see the columns in bench/stream-client.c. */
export function parseOutcome(line: string): CClientOutcome {
  const f = line.split('\t');
  if (f.length !== 14) throw new Error(`stream-client: expected 14 columns, got ${line}`);
  const dash = (s: string) => (s === '-' ? null : s);
  const ttft = Number(f[2]);
  return {
    dueMs: Number(f[0]),
    status: Number(f[1]),
    ttftMs: ttft < 0 ? null : ttft,
    gapP99Ms: Number(f[3]),
    tokens: Number(f[5]),
    completed: f[6] === '1',
    reused: f[7] === '1',
    latencyMs: Number(f[8]),
    requestId: dash(f[9]),
    code: dash(f[10]),
    retryAfterS: f[11] === '-' ? null : Number(f[11]),
    connectMs: Number(f[12]) < 0 ? null : Number(f[12]),
    body: Number(f[13]),
  };
}

export type ClientRun =
  | { readonly mode: 'open'; readonly atMs: readonly number[] }
  | { readonly mode: 'closed'; readonly connections: number; readonly durationS: number };

/**
 * POSTs `body` to `url`'s /v1/chat/completions as `run` says — with several bodies, the k-th
 * request the (k mod count)-th — and resolves with every request's outcome, in the order the
 * requests ended. `cores`: a `taskset -c` list for the client;
 * `keepAs`: a file to keep the client's own lines in (one per request, for a closer look).
 */
export function runCClient(
  url: string,
  body: string | readonly string[],
  run: ClientRun,
  opts: { cores?: string; keepAs?: string; onSpawn?: (p: ChildProcess) => void } = {},
): Promise<CClientOutcome[]> {
  const { hostname, port } = new URL(url);
  const dir = mkdtempSync(join(tmpdir(), 'goodput-client-'));
  const bodies = typeof body === 'string' ? [body] : body;
  const bodyFiles = bodies.map((b, i) => {
    const file = join(dir, `body-${i}.json`);
    writeFileSync(file, b);
    return file;
  });
  const outFile = join(dir, 'outcomes.tsv');
  const modeArgs =
    run.mode === 'open'
      ? ['open', join(dir, 'schedule.txt')]
      : ['closed', String(run.connections), String(run.durationS)];
  if (run.mode === 'open') writeFileSync(modeArgs[1], run.atMs.map((t) => t.toFixed(3)).join('\n'));
  const args = [cClientBinary(), hostname, port, bodyFiles.join(','), outFile, ...modeArgs];
  const proc =
    opts.cores === undefined
      ? spawn(args[0], args.slice(1), { stdio: ['ignore', 'inherit', 'inherit'] })
      : spawn('taskset', ['-c', opts.cores, ...args], { stdio: ['ignore', 'inherit', 'inherit'] });
  opts.onSpawn?.(proc);
  return new Promise((ok, fail) => {
    proc.once('error', fail);
    proc.once('exit', (code) => {
      try {
        if (code !== 0) throw new Error(`stream-client ${modeArgs[0]} exited ${code}`);
        const text = readFileSync(outFile, 'utf8');
        if (opts.keepAs !== undefined) writeFileSync(opts.keepAs, text);
        ok(
          text
            .split('\n')
            .filter((l) => l !== '')
            .map(parseOutcome),
        );
      } catch (e) {
        fail(e as Error);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
