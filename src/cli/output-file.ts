/**
 * Files a command writes its results to (`--out`, `--json`, `--html`, `--decisions`): checked
 * before the run starts, so a mistyped path fails at once naming its flag — not after an hour's
 * benchmark whose result then has nowhere to go — and written whole after, a failure there
 * (a full disk) a ConfigError naming the flag too, never a stack trace.
 */
import { accessSync, constants, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigError } from '../core/errors.ts';

const EXPECTED = 'a file in a directory this process can write';

/** Throws unless `file` (when given) can be written: its directory writable, itself a writable file or absent. */
export function checkOutput(flag: string, file: unknown): void {
  if (file === undefined) return;
  const path = resolve(String(file));
  try {
    accessSync(dirname(path), constants.W_OK);
    const st = statSync(path, { throwIfNoEntry: false });
    if (st !== undefined && !st.isFile()) throw new Error('not a file');
    if (st !== undefined) accessSync(path, constants.W_OK);
  } catch {
    throw new ConfigError(flag, EXPECTED, String(file));
  }
}

/** Checks each `[flag, file]` pair: all a command's outputs before it runs. */
export function checkOutputs(...outputs: readonly (readonly [string, unknown])[]): void {
  for (const [flag, file] of outputs) checkOutput(flag, file);
}

export function writeOutput(flag: string, file: string, text: string): void {
  try {
    writeFileSync(file, text);
  } catch (e) {
    throw new ConfigError(
      flag,
      EXPECTED,
      `${file} (${(e as NodeJS.ErrnoException).code ?? 'unwritable'})`,
    );
  }
}
