/**
 * Draws each synthetic request's (input, output) token lengths from two specs. Input and output
 * use separate streams, so changing one spec leaves the other's draws as they were. When both
 * are `sharegpt`, one row is drawn per request and gives both lengths: real prompts and their
 * outputs are correlated, and drawing them apart would lose it. Writes into its own fields
 * instead of returning a pair, to keep a million draws free of allocation.
 */
import type { Rng } from '../../core/ports/rng.ts';
import type { Tokens } from '../../core/request/units.ts';
import type { LengthSpec } from './length-spec.ts';
import type { ShareGptLengths } from './sharegpt-lengths.ts';

export class LengthDraw {
  input: Tokens = 0;
  output: Tokens = 0;
  /** Both lengths come from one ShareGPT row per request. */
  readonly joint: boolean;
  private readonly drawInput: () => Tokens;
  private readonly drawOutput: () => Tokens;
  private readonly table: ShareGptLengths | undefined;
  private readonly pairRng: Rng;

  /** `inputRng` and `outputRng` must be independent streams; `table` is needed for `sharegpt`. */
  constructor(
    input: LengthSpec,
    output: LengthSpec,
    inputRng: Rng,
    outputRng: Rng,
    table?: ShareGptLengths,
  ) {
    this.joint = input.kind === 'sharegpt' && output.kind === 'sharegpt';
    this.table = table;
    this.pairRng = inputRng;
    this.drawInput = lengthSampler(input, inputRng, table?.input);
    this.drawOutput = lengthSampler(output, outputRng, table?.output);
  }

  next(): void {
    if (this.joint) {
      const t = this.table!;
      const row = Math.floor(this.pairRng.next() * t.rows);
      this.input = t.input[row];
      this.output = t.output[row];
      return;
    }
    this.input = this.drawInput();
    this.output = this.drawOutput();
  }
}

/** One length per call from `spec`; `column` is the ShareGPT column this side reads. */
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
      return () => Math.max(1, Math.round(-mean * Math.log(1 - rng.next())));
    }
    case 'sharegpt': {
      if (!column) throw new Error('sharegpt length spec needs the ShareGPT table');
      const rows = column.length;
      return () => column[Math.floor(rng.next() * rows)];
    }
  }
}
