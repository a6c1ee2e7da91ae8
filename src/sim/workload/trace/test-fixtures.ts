/**
 * Paths of the committed trace fixtures and scratch trace files, for the loaders' tests
 * (test-only helper).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export function fixture(name: string): string {
  return fileURLToPath(new URL(`../../../../test/fixtures/traces/${name}`, import.meta.url));
}

/** A directory for one test file's scratch traces; `cleanup` removes it. */
export function scratch(prefix: string): {
  file(name: string, text: string): string;
  cleanup(): void;
} {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return {
    file(name, text) {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
