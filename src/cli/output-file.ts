/**
 * Files a command writes its results to (`--out`, `--json`, `--html`, `--decisions`): checked
 * before the run starts, so a mistyped path fails at once naming its flag — not after an hour's
 * benchmark whose result then has nowhere to go — and written whole after, a failure there
 * (a full disk) a ConfigError naming the flag too, never a stack trace.
 */
import {
  accessSync,
  closeSync,
  constants,
  openSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
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
    throw unwritable(flag, file, e);
  }
}

/** Bytes a line file holds before it writes them. */
const LINE_BUFFER = 64 * 1024;

/**
 * A file written a line at a time as a run goes (`--decisions`), in writes of 64 KiB: one that
 * fails midway (a full disk) is a ConfigError naming the flag, as at the end.
 */
export function lineFile(flag: string, file: string) {
  let fd: number;
  try {
    fd = openSync(file, 'w');
  } catch (e) {
    throw unwritable(flag, file, e);
  }
  let held = '';
  const flush = () => {
    try {
      writeSync(fd, held);
    } catch (e) {
      throw unwritable(flag, file, e);
    }
    held = '';
  };
  return {
    write(line: string): void {
      held += `${line}\n`;
      if (held.length >= LINE_BUFFER) flush();
    },
    close(): void {
      flush();
      closeSync(fd);
    },
  };
}

function unwritable(flag: string, file: string, e: unknown): ConfigError {
  return new ConfigError(
    flag,
    EXPECTED,
    `${file} (${(e as NodeJS.ErrnoException).code ?? 'unwritable'})`,
  );
}
