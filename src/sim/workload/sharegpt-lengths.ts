/**
 * The named ShareGPT length tables: (prompt, output) token pairs committed under data/lengths/ and
 * read relative to this module, so a clone works without the raw data. Two tables measure
 * different things and are easy to confuse, so each has an explicit name and a description that
 * error messages and help text quote (data/lengths/SOURCE.md tells how each was derived). Rows
 * stay paired: drawing row i gives both lengths, keeping whatever correlation the table holds.
 * Each file is read once per process, on first use.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { InputError } from '../../core/errors.ts';

export interface ShareGptLengths {
  readonly rows: number;
  readonly input: Int32Array;
  readonly output: Int32Array;
}

export const LENGTH_TABLE_NAMES = ['sharegpt-vllm', 'sharegpt-sarathi'] as const;

export type LengthTableName = (typeof LENGTH_TABLE_NAMES)[number];

interface LengthTableSource {
  /** File name under data/lengths/. */
  readonly file: string;
  /** What the table is, for messages: whose sample, which tokenizer, mean lengths. */
  readonly about: string;
}

export const LENGTH_TABLES: Readonly<Record<LengthTableName, LengthTableSource>> = {
  'sharegpt-vllm': {
    file: 'sharegpt-vllm.json',
    about: "vLLM bench's ShareGPT first turns, Llama-3 tokens, mean ≈215 in / 200 out",
  },
  // The file keeps its first name: golden reports and SOURCE.md cite it.
  'sharegpt-sarathi': {
    file: 'sharegpt.json',
    about: "Sarathi-Serve's multi-turn ShareGPT, Llama-2 tokens, mean ≈2,340 in / 439 out",
  },
};

export function isLengthTableName(text: string): text is LengthTableName {
  return Object.hasOwn(LENGTH_TABLES, text);
}

export function lengthTableFile(name: LengthTableName): string {
  return fileURLToPath(
    new URL(`../../../data/lengths/${LENGTH_TABLES[name].file}`, import.meta.url),
  );
}

const cached = new Map<LengthTableName, ShareGptLengths>();

export function lengthTable(name: LengthTableName): ShareGptLengths {
  let table = cached.get(name);
  if (table === undefined) {
    const file = lengthTableFile(name);
    table = parseShareGptLengths(readFileSync(file, 'utf8'), file);
    cached.set(name, table);
  }
  return table;
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
