/**
 * A loaded trace, held column-wise (typed arrays for times and sizes, one sparse column for the
 * rare extras) so a multi-million-row trace costs tens of bytes per row, not an object each.
 * `finishTable` sorts rows by time — stably, so equal times keep file order — and re-bases them
 * so the earliest request is at 0: traces are usually sorted, but a merged or hand-edited one
 * need not be, and the simulator needs arrival order. How many rows moved is reported.
 */
import type { Ms } from '../../../core/request/units.ts';
import type { TraceFormatName } from '../workload-options.ts';
import type { RowExtras, TraceRow } from './trace-format.ts';

export interface TraceTable {
  readonly file: string;
  readonly format: TraceFormatName;
  readonly formatDetected: boolean;
  readonly rows: number;
  /** Ascending; the first is 0. */
  readonly tMs: Float64Array;
  readonly inputTokens: Int32Array;
  readonly outputTokens: Int32Array;
  /** Row i's extras, or undefined when no row has any. */
  readonly extras: readonly (RowExtras | undefined)[] | undefined;
  /** Data rows in the file, skipped ones included. */
  readonly rowsRead: number;
  /** Rows skipped on purpose, by reason. */
  readonly skipped: Readonly<Record<string, number>>;
  /** Rows earlier than some row above them in the file, put in order by the loader. */
  readonly reordered: number;
}

export class TableBuilder {
  readonly tMs: number[] = [];
  readonly inputTokens: number[] = [];
  readonly outputTokens: number[] = [];
  extras: (RowExtras | undefined)[] | undefined;

  add(row: TraceRow): void {
    const i = this.tMs.length;
    this.tMs.push(row.tMs);
    this.inputTokens.push(row.inputTokens);
    this.outputTokens.push(row.outputTokens);
    if (row.extras && !this.extras)
      this.extras = new Array<RowExtras | undefined>(i).fill(undefined);
    this.extras?.push(row.extras);
  }

  get rows(): number {
    return this.tMs.length;
  }
}

export interface TableInfo {
  readonly file: string;
  readonly format: TraceFormatName;
  readonly formatDetected: boolean;
  readonly rowsRead: number;
  readonly skipped: Readonly<Record<string, number>>;
}

export function finishTable(b: TableBuilder, info: TableInfo): TraceTable {
  const n = b.rows;
  let reordered = 0;
  let latest = -Infinity;
  for (let i = 0; i < n; i++) {
    if (b.tMs[i] < latest) reordered++;
    else latest = b.tMs[i];
  }
  const order =
    reordered > 0
      ? Array.from({ length: n }, (_, i) => i).sort((x, y) => b.tMs[x] - b.tMs[y] || x - y)
      : undefined;

  const origin: Ms = n > 0 ? b.tMs[order ? order[0] : 0] : 0;
  const tMs = new Float64Array(n);
  const inputTokens = new Int32Array(n);
  const outputTokens = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const j = order ? order[i] : i;
    tMs[i] = b.tMs[j] - origin;
    inputTokens[i] = b.inputTokens[j];
    outputTokens[i] = b.outputTokens[j];
  }
  const src = b.extras;
  const extras = src && (order ? order.map((j) => src[j]) : src);
  return { ...info, rows: n, tMs, inputTokens, outputTokens, extras, reordered };
}
