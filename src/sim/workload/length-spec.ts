/**
 * Token-length specs for synthetic requests, one for input and one for output:
 * `fixed:N`, `uniform:A:B` (integers, both ends inclusive), `exp:MEAN` (exponential, rounded,
 * at least 1, at most MAX_REQUEST_TOKENS) and a named length table, `sharegpt-vllm` or `sharegpt-sarathi` (see
 * sharegpt-lengths.ts). Every length is an integer ≥ 1, because a request with no prompt or no
 * output has nothing to serve. A spec that does not parse fails with the option's name and the
 * text as given. Plain `sharegpt` is refused: the two tables differ tenfold in prompt length, and
 * a run should say which it meant.
 */
import { ConfigError } from '../../core/errors.ts';
import { MAX_REQUEST_TOKENS } from '../../core/request/units.ts';
import {
  isLengthTableName,
  LENGTH_TABLE_NAMES,
  LENGTH_TABLES,
  type LengthTableName,
} from './sharegpt-lengths.ts';

export type LengthSpec =
  | { readonly kind: 'fixed'; readonly value: number }
  | { readonly kind: 'uniform'; readonly min: number; readonly max: number }
  | { readonly kind: 'exp'; readonly mean: number }
  | { readonly kind: 'table'; readonly name: LengthTableName };

const TABLES = LENGTH_TABLE_NAMES.map((name) => `\`${name}\``).join(' or ');
const MAX = MAX_REQUEST_TOKENS;
const EXPECTED = `\`fixed:N\`, \`uniform:A:B\` (1 ≤ A ≤ B ≤ ${MAX}), \`exp:MEAN\` (0 < MEAN ≤ ${MAX}; draws at most ${MAX}), ${TABLES}`;
const WHICH_SHAREGPT = LENGTH_TABLE_NAMES.map(
  (name) => `\`${name}\` (${LENGTH_TABLES[name].about})`,
).join(' or ');
const POSITIVE_INT = /^[1-9][0-9]*$/;

export function parseLengthSpec(text: string, option: string): LengthSpec {
  const fail = (): never => {
    throw new ConfigError(option, EXPECTED, text);
  };
  const trimmed = text.trim();
  if (isLengthTableName(trimmed)) return { kind: 'table', name: trimmed };
  if (trimmed === 'sharegpt') throw new ConfigError(option, WHICH_SHAREGPT, text);
  const parts = trimmed.split(':');
  const int = (s: string | undefined): number => {
    if (s === undefined || !POSITIVE_INT.test(s)) return fail();
    const n = Number(s);
    return n <= MAX_REQUEST_TOKENS ? n : fail();
  };
  switch (parts[0]) {
    case 'fixed':
      if (parts.length !== 2) fail();
      return { kind: 'fixed', value: int(parts[1]) };
    case 'uniform': {
      if (parts.length !== 3) fail();
      const min = int(parts[1]);
      const max = int(parts[2]);
      if (min > max) fail();
      return { kind: 'uniform', min, max };
    }
    case 'exp': {
      if (parts.length !== 2 || parts[1].trim() === '') fail();
      const mean = Number(parts[1]);
      if (!(mean > 0 && mean <= MAX_REQUEST_TOKENS)) fail();
      return { kind: 'exp', mean };
    }
    default:
      return fail();
  }
}

/** The canonical text of a spec, for reports. */
export function formatLengthSpec(spec: LengthSpec): string {
  switch (spec.kind) {
    case 'fixed':
      return `fixed:${spec.value}`;
    case 'uniform':
      return `uniform:${spec.min}:${spec.max}`;
    case 'exp':
      return `exp:${spec.mean}`;
    case 'table':
      return spec.name;
  }
}

/** The length table both specs name, when they name the same one: a request draws one row. */
export function jointTable(input: LengthSpec, output: LengthSpec): LengthTableName | undefined {
  return input.kind === 'table' && output.kind === 'table' && input.name === output.name
    ? input.name
    : undefined;
}

/** The length tables the specs read, each once. */
export function tablesNamed(...specs: readonly LengthSpec[]): LengthTableName[] {
  const names = specs.flatMap((s) => (s.kind === 'table' ? [s.name] : []));
  return [...new Set(names)];
}
