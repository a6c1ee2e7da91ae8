/**
 * Files a command writes its results to (`--out`, `--json`, `--html`, `--decisions`): checked
 * before the run starts, so a mistyped path fails at once naming its flag — not after an hour's
 * benchmark whose result then has nowhere to go — and written whole after, a failure there
 * (a full disk) a ConfigError naming the flag too, never a stack trace. No two outputs may be
 * one file, nor an output a file the run reads (`--trace`, `--policy`, `--learned-state`…):
 * either would be lost. A file written as the run goes (`--decisions`) takes its place only
 * when the run is done, so a run refused or failed leaves what was there.
 */
import {
  accessSync,
  closeSync,
  constants,
  openSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
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

/** The flags a run reads a file from, by their key in a command's parsed flags. */
const INPUT_FLAGS: Readonly<Record<string, string>> = {
  trace: '--trace',
  policy: '--policy',
  learnedState: '--learned-state',
  capacityEnvelope: '--capacity-envelope',
};

/**
 * Checks each `[flag, file]` pair — all a command's outputs, before it runs — and that none is
 * another's file, or a file one of `flags`' inputs names.
 */
export function checkOutputs(
  flags: Readonly<Record<string, unknown>>,
  ...outputs: readonly (readonly [string, unknown])[]
): void {
  const named = new Map<string, string>();
  for (const [key, flag] of Object.entries(INPUT_FLAGS)) {
    const file = flags[key];
    if (typeof file === 'string' && statSync(file, { throwIfNoEntry: false })?.isFile() === true)
      named.set(sameFile(file), flag);
  }
  for (const [flag, file] of outputs) {
    checkOutput(flag, file);
    if (file === undefined) continue;
    const same = sameFile(String(file));
    const other = named.get(same);
    if (other !== undefined) {
      throw new ConfigError(flag, `a file no other flag names (${other} names it)`, String(file));
    }
    named.set(same, flag);
  }
}

/** A file's one name: its real path where it exists (links followed), else its absolute one. */
function sameFile(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return resolve(file);
  }
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
 * fails midway (a full disk) is a ConfigError naming the flag, as at the end. Written beside
 * `file` until `close` moves it there; `discard` (a run that failed) leaves `file` as it was.
 */
export function lineFile(flag: string, file: string) {
  const partial = join(dirname(file), `.${basename(file)}.${process.pid}.partial`);
  let fd: number;
  try {
    fd = openSync(partial, 'w');
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
      try {
        renameSync(partial, file);
      } catch (e) {
        throw unwritable(flag, file, e);
      }
    },
    discard(): void {
      closeSync(fd);
      rmSync(partial, { force: true });
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
