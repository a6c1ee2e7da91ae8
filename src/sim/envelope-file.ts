/**
 * Reads a capacity envelope file (`goodput capacity --out`) for `--capacity-envelope`: JSON,
 * checked field by field; a missing or malformed file is a ConfigError naming the flag or the
 * field, never a crash. So is one measured on another engine than the one planned with: its rate
 * is another model's, GPU's or scheduler's.
 */
import { readFileSync } from 'node:fs';
import {
  otherEngine,
  parseEnvelope,
  type CapacityEnvelope,
  type EnvelopeEngine,
} from '../core/autoscale/capacity-envelope.ts';
import { ConfigError } from '../core/errors.ts';

export function loadEnvelope(file: string, engine: EnvelopeEngine): CapacityEnvelope {
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
  const envelope = parseEnvelope(doc, file);
  const other = otherEngine(envelope, engine);
  if (other !== undefined) {
    const planned = `${engine.model}/${engine.gpu}/tp${engine.tp} ${engine.engineVersion}`;
    const expected = `an envelope measured on the engine planned with (${planned})`;
    throw new ConfigError('--capacity-envelope', expected, `${file} (measured on ${other})`);
  }
  return envelope;
}
