/**
 * The ShareGPT (prompt, output) length pairs, derived by scripts/derive-lengths.ts into
 * data/lengths/sharegpt.json and read relative to this module, so a clone works without the raw
 * trace. Rows stay paired: row i is one real conversation turn, and sampling the pair keeps the
 * correlation between prompt and output length. Loaded once per process, on first use.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { InputError } from '../../core/errors.ts';

export interface ShareGptLengths {
  readonly rows: number;
  readonly input: Int32Array;
  readonly output: Int32Array;
}

export const SHAREGPT_LENGTHS_FILE = fileURLToPath(
  new URL('../../../data/lengths/sharegpt.json', import.meta.url),
);

let cached: ShareGptLengths | undefined;

export function shareGptLengths(): ShareGptLengths {
  cached ??= parseShareGptLengths(
    readFileSync(SHAREGPT_LENGTHS_FILE, 'utf8'),
    SHAREGPT_LENGTHS_FILE,
  );
  return cached;
}

export function parseShareGptLengths(text: string, file: string): ShareGptLengths {
  const data = JSON.parse(text) as { input?: unknown; output?: unknown };
  const input = column(data.input, file, 'input');
  const output = column(data.output, file, 'output');
  if (input.length !== output.length || input.length === 0) {
    throw new InputError(
      file,
      1,
      'output',
      `expected ${input.length} paired lengths, got ${output.length}`,
    );
  }
  return { rows: input.length, input, output };
}

function column(values: unknown, file: string, field: string): Int32Array {
  if (!Array.isArray(values)) throw new InputError(file, 1, field, 'expected an array of lengths');
  const out = new Int32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v: unknown = values[i];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 0x7fffffff) {
      throw new InputError(file, 1, `${field}[${i}]`, `expected an integer ≥ 1, got ${String(v)}`);
    }
    out[i] = v;
  }
  return out;
}
