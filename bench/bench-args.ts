// What every benchmark script reads from its command line: `--name value` flags, and where the
// raw public data lives (`--data`, by default ../shared/data beside the repository).
import { fileURLToPath } from 'node:url';
import { resolve } from 'node:path';

const args = process.argv.slice(2);

/** The value after `name`, or undefined when the flag is absent. */
export function flag(name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

/** An integer flag's value, at least `least`, or undefined when absent; an error naming it else. */
export function intFlag(name: string, least = 1): number | undefined {
  const raw = flag(name);
  if (raw === undefined) return undefined;
  const v = Number(raw);
  if (!Number.isInteger(v) || v < least) {
    throw new Error(`${name}: expected an integer ≥ ${least}, got ${raw}`);
  }
  return v;
}

export const REPO_ROOT = resolve(fileURLToPath(import.meta.url), '../..');

export const DATA_DIR = resolve(flag('--data') ?? resolve(REPO_ROOT, '../shared/data'));

/**
 * The embedded fleet's shape for `goodput serve` (`--model --gpu --tp --replicas
 * --max-num-seqs`), passed on as given; empty for the default fleet.
 */
export const FLEET_ARGS: readonly string[] = [
  '--model',
  '--gpu',
  '--tp',
  '--replicas',
  '--max-num-seqs',
].flatMap((f) => (flag(f) === undefined ? [] : [f, flag(f) as string]));
