/**
 * A minimal reader for Vidur's profiling CSVs (plain comma-separated, no quoting). Main rule:
 * every value read names its 1-based file line, so fitted checks can cite their source rows.
 */
import { readFileSync } from 'node:fs';

export interface CsvRow {
  /** 1-based line in the file; the header is line 1. */
  readonly line: number;
  num(column: string): number;
  str(column: string): string;
}

export interface Csv {
  readonly path: string;
  readonly rows: CsvRow[];
}

export function readCsv(path: string): Csv {
  const lines = readFileSync(path, 'utf8').split(/\r?\n/);
  const header = lines[0].split(',');
  const index = new Map(header.map((h, i) => [h, i]));
  const col = (name: string): number => {
    const i = index.get(name);
    if (i === undefined) throw new Error(`${path}: no column ${name}`);
    return i;
  };
  const rows: CsvRow[] = [];
  for (let i = 1; i < lines.length; i++) {
    if (lines[i].trim() === '') continue;
    const cells = lines[i].split(',');
    const line = i + 1;
    rows.push({
      line,
      str: (c) => cells[col(c)] ?? '',
      num: (c) => {
        const text = cells[col(c)];
        const v = text === undefined || text === '' ? NaN : Number(text);
        if (!Number.isFinite(v))
          throw new Error(`${path}:${line}: ${c}: not a number: ${JSON.stringify(text)}`);
        return v;
      },
    });
  }
  return { path, rows };
}

/** The median of an op's per-row median, or 0 where the op did not run (empty cell). */
export function opMedian(row: CsvRow, op: string): number {
  return row.str(`time_stats.${op}.median`) === '' ? 0 : row.num(`time_stats.${op}.median`);
}
