/**
 * Draws each synthetic request's (input, output) token lengths from two specs. Input and output
 * use separate streams, so changing one spec leaves the other's draws as they were. When both
 * name the same length table, one row is drawn per request and gives both lengths: real prompts
 * and their outputs are correlated, and drawing them apart would lose it. Specs naming different
 * tables each read their own table's column. Writes into its own fields instead of returning a
 * pair, to keep a million draws free of allocation.
 */
import type { Rng } from '../../core/ports/rng.ts';
import { MAX_REQUEST_TOKENS, type Tokens } from '../../core/request/units.ts';
import { jointTable, type LengthSpec } from './length-spec.ts';
import type { LengthTableName, ShareGptLengths } from './sharegpt-lengths.ts';

/** The loaded length tables, by name; every table a spec names must be present. */
export type LengthTables = Readonly<Partial<Record<LengthTableName, ShareGptLengths>>>;

export class LengthDraw {
  input: Tokens = 0;
  output: Tokens = 0;
  /** Both lengths come from one table row per request. */
  readonly joint: boolean;
  private readonly drawInput: () => Tokens;
  private readonly drawOutput: () => Tokens;
  private readonly pairTable: ShareGptLengths | undefined;
  private readonly pairRng: Rng;

  /** `inputRng` and `outputRng` must be independent; a joint draw picks its row with `inputRng`. */
  constructor(
    input: LengthSpec,
    output: LengthSpec,
    inputRng: Rng,
    outputRng: Rng,
    tables: LengthTables = {},
  ) {
    const joint = jointTable(input, output);
    this.joint = joint !== undefined;
    this.pairTable = joint === undefined ? undefined : tableOf(tables, joint);
    this.pairRng = inputRng;
    this.drawInput = lengthSampler(input, inputRng, columnOf(tables, input, 'input'));
    this.drawOutput = lengthSampler(output, outputRng, columnOf(tables, output, 'output'));
  }

  next(): void {
    if (this.pairTable !== undefined) {
      const t = this.pairTable;
      const row = Math.floor(this.pairRng.next() * t.rows);
      this.input = t.input[row];
      this.output = t.output[row];
      return;
    }
    this.input = this.drawInput();
    this.output = this.drawOutput();
  }
}

/** One length per call from `spec`; `column` is the table column this side reads. */
export function lengthSampler(spec: LengthSpec, rng: Rng, column?: Int32Array): () => Tokens {
  switch (spec.kind) {
    case 'fixed': {
      const v = spec.value;
      return () => v;
    }
    case 'uniform': {
      const { min } = spec;
      const span = spec.max - spec.min + 1;
      return () => min + Math.floor(rng.next() * span);
    }
    case 'exp': {
      const { mean } = spec;
      const draw = () => Math.round(-mean * Math.log(1 - rng.next()));
      return () => Math.min(MAX_REQUEST_TOKENS, Math.max(1, draw()));
    }
    case 'table': {
      if (!column) throw new Error(`length spec ${spec.name} needs its table`);
      const rows = column.length;
      return () => column[Math.floor(rng.next() * rows)];
    }
  }
}

function tableOf(tables: LengthTables, name: LengthTableName): ShareGptLengths {
  const table = tables[name];
  if (table === undefined) throw new Error(`length table ${name} was not loaded`);
  return table;
}

function columnOf(
  tables: LengthTables,
  spec: LengthSpec,
  side: 'input' | 'output',
): Int32Array | undefined {
  return spec.kind === 'table' ? tableOf(tables, spec.name)[side] : undefined;
}
