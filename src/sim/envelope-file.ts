/**
 * Reads a capacity envelope file (`goodput capacity --out`) for `--capacity-envelope`: JSON,
 * checked field by field; a missing or malformed file is a ConfigError naming the flag or the
 * field, never a crash.
 */
import { readFileSync } from 'node:fs';
import { parseEnvelope, type CapacityEnvelope } from '../core/autoscale/capacity-envelope.ts';
import { ConfigError } from '../core/errors.ts';

export function loadEnvelope(file: string): CapacityEnvelope {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(
      '--capacity-envelope',
      'a readable file',
      `${file} (${(e as NodeJS.ErrnoException).code ?? 'unreadable'})`,
    );
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new ConfigError(
      '--capacity-envelope',
      'a JSON file written by goodput capacity --out',
      file,
    );
  }
  return parseEnvelope(doc, file);
}
