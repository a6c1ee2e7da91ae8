/**
 * Checks one field of one trace line and names it when it is wrong: every problem becomes an
 * InputError with the file, the 1-based line and the field, so a bad row in a million-line trace
 * is found at once. CSV cells arrive as text, JSON values as whatever the line held.
 */
import { InputError } from '../../../core/errors.ts';
import { MAX_REQUEST_TOKENS } from '../../../core/request/units.ts';
import { isSloClassName, type SloClassName } from '../../../core/request/slo-classes.ts';

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

/** A token count: an integer from `min` to MAX_REQUEST_TOKENS. */
export function tokens(at: LineRef, field: string, n: number, min = 1): number {
  if (!Number.isInteger(n) || n < min || n > MAX_REQUEST_TOKENS) {
    fail(at, field, `expected an integer from ${min} to ${MAX_REQUEST_TOKENS}, got ${n}`);
  }
  return n;
}

/**
 * The latest time a trace's clock may read, in its own unit: past epoch milliseconds (1.8e12 in
 * 2027) with room to spare, and far inside what milliseconds hold exactly, so a time in seconds
 * stays finite once converted.
 */
const MAX_TRACE_TIME = 1e13;

/** A timestamp on the trace's own clock: from 0 to MAX_TRACE_TIME. */
export function timestamp(at: LineRef, field: string, n: number): number {
  if (!(n >= 0 && n <= MAX_TRACE_TIME)) {
    fail(at, field, `expected a time from 0 to ${MAX_TRACE_TIME}, got ${n}`);
  }
  return n;
}

/** A JSON value as a non-empty string. */
export function jsonText(at: LineRef, field: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') {
    fail(at, field, `expected a non-empty string, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** A JSON value as an SLO class's name. */
export function jsonClass(at: LineRef, field: string, value: unknown): SloClassName {
  const name = jsonText(at, field, value);
  if (!isSloClassName(name)) {
    fail(
      at,
      field,
      `unknown class ${JSON.stringify(name)}; expected interactive, reasoning, batch or best_effort`,
    );
  }
  return name;
}
