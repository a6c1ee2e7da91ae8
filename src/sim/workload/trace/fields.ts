/**
 * Checks one field of one trace line and names it when it is wrong: every problem becomes an
 * InputError with the file, the 1-based line and the field, so a bad row in a million-line trace
 * is found at once. CSV cells arrive as text, JSON values as whatever the line held.
 */
import { InputError } from '../../../core/errors.ts';

export interface LineRef {
  readonly file: string;
  readonly line: number;
}

export function fail(at: LineRef, field: string, problem: string): never {
  throw new InputError(at.file, at.line, field, problem);
}

/** A CSV cell as a finite number. */
export function cellNumber(at: LineRef, field: string, cell: string | undefined): number {
  const text = cell?.trim();
  if (text === undefined || text === '') fail(at, field, 'missing value');
  const n = Number(text);
  if (!Number.isFinite(n)) fail(at, field, `expected a number, got ${JSON.stringify(text)}`);
  return n;
}

/** A JSON value as a finite number. */
export function jsonNumber(at: LineRef, field: string, value: unknown): number {
  if (value === undefined) fail(at, field, 'missing field');
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    fail(at, field, `expected a number, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** A token count: an integer ≥ `min`. */
export function tokens(at: LineRef, field: string, n: number, min = 1): number {
  if (!Number.isInteger(n) || n < min) fail(at, field, `expected an integer ≥ ${min}, got ${n}`);
  return n;
}

/** A timestamp on the trace's own clock: finite and ≥ 0. */
export function timestamp(at: LineRef, field: string, n: number): number {
  if (n < 0) fail(at, field, `expected a time ≥ 0, got ${n}`);
  return n;
}
