/**
 * CSV headers: finds the columns a format needs by name (case-insensitive, surrounding spaces
 * ignored), so column order does not matter and extra columns are allowed. The trace CSVs we
 * read have no quoted cells, so a line is split on commas.
 */
import { fail, type LineRef } from './fields.ts';

export function splitCsv(line: string): string[] {
  return line.split(',');
}

function normalise(name: string): string {
  return name.trim().toLowerCase();
}

/** Whether `line` names every column in `required`. */
export function hasColumns(line: string, required: readonly string[]): boolean {
  const names = splitCsv(line).map(normalise);
  return required.every((r) => names.includes(normalise(r)));
}

/** The index of each `required` column, in `required`'s order; a missing one is an InputError. */
export function headerColumns(at: LineRef, line: string, required: readonly string[]): number[] {
  const names = splitCsv(line).map(normalise);
  return required.map((r) => {
    const i = names.indexOf(normalise(r));
    if (i < 0) fail(at, r, `missing column: the header is ${JSON.stringify(line)}`);
    return i;
  });
}
