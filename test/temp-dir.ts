// Temporary directories for a test file, removed when its process exits: `node --test` runs
// each file in a process of its own, so nothing a suite writes outlives it in the machine's
// temporary directory.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];
process.on('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A new directory `goodput-<name>-XXXXXX` under the temporary directory, gone at exit. */
export function tempDir(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `goodput-${name}-`));
  made.push(dir);
  return dir;
}
