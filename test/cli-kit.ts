// Running `goodput` as a user does, for the command-line suites: real processes, real files,
// real exit codes.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './temp-dir.ts';

export const dir = tempDir('cli');

export function goodput(...args: string[]) {
  const r = spawnSync(process.execPath, ['bin/goodput.js', ...args], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

let reports = 0;
/** `goodput simulate ARGS --out FILE` through a real process, which must succeed: its report. */
export function simulated(...args: string[]) {
  const out = join(dir, `report-${++reports}.json`);
  const r = goodput('simulate', ...args, '--out', out);
  assert.equal(r.code, 0, r.err);
  return JSON.parse(readFileSync(out, 'utf8'));
}

/** `goodput ARGS` in a process of its own, run to its end beside others. */
export function goodputAside(...args: string[]): Promise<ReturnType<typeof goodput>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/goodput.js', ...args]);
    let [out, err] = ['', ''];
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, out, err }));
  });
}

/**
 * Each case — extra arguments, and the flag its error must name — exits 2 naming that flag, with
 * no stack trace. The cases run at once, each a process of its own.
 */
export async function exitsNaming(
  base: readonly string[],
  cases: readonly (readonly [readonly string[], RegExp])[],
): Promise<void> {
  const runs = await Promise.all(cases.map(([args]) => goodputAside(...base, ...args)));
  for (const [i, [args, named]] of cases.entries()) {
    const r = runs[i];
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.err}`);
    assert.match(r.err, named);
    assert.doesNotMatch(r.err, /\n\s+at /, 'no stack trace');
  }
}
