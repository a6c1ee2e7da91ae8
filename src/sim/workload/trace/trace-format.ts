/**
 * The contract every trace format implements: recognise a file from its first line, and parse
 * its lines one at a time into rows. Rows carry times on the trace's own clock; the loader
 * re-bases them to the earliest request, sorts, windows and scales, so formats stay small and
 * only know their own columns. Every malformed value is an InputError naming file, line, field.
 */
import type { PrefixBlocks, ToolCall } from '../../../core/request/request.ts';
import type { SloClassName } from '../../../core/request/slo-classes.ts';
import type { Ms, Tokens } from '../../../core/request/units.ts';
import type { TraceFormatName } from '../workload-options.ts';

/** What a row may carry beyond time and sizes; absent fields come from the workload's specs. */
export interface RowExtras {
  readonly maxTokens?: Tokens;
  readonly tenant?: string;
  readonly sloClass?: SloClassName;
  readonly session?: string;
  readonly prefix?: PrefixBlocks;
  readonly toolCalls?: readonly ToolCall[];
  /** The client's deadline, this long after the request arrives. */
  readonly timeoutMs?: Ms;
  /** Choices it asks for (`n`), each its output long. */
  readonly choices?: number;
}

export interface TraceRow {
  readonly tMs: Ms;
  readonly inputTokens: Tokens;
  readonly outputTokens: Tokens;
  readonly extras?: RowExtras;
}

/** A row to skip on purpose (not an error), counted under `reason` in the workload description. */
export interface SkippedRow {
  readonly skip: string;
}

export const HEADER = 'header';
/** A line that is part of a row the format gives at the end (`LineParser.end`). */
export const PART = 'part';
export type ParsedLine = TraceRow | SkippedRow | typeof HEADER | typeof PART;

/**
 * Parses the non-blank lines of one file, in order; may keep state such as header columns.
 * `end`, when a format has it, gives after the last line the rows its lines were parts of
 * (a request told in several records); `lineNo` is the file's last line.
 */
export type LineParser = ((line: string, lineNo: number) => ParsedLine) & {
  readonly end?: (lineNo: number) => readonly TraceRow[];
};

export interface TraceFormat {
  readonly name: TraceFormatName;
  /** Whether the first non-blank line of a file is in this format. Cheap and side-effect free. */
  detect(firstLine: string): boolean;
  open(file: string): LineParser;
}

export function isSkipped(parsed: ParsedLine): parsed is SkippedRow {
  return typeof parsed === 'object' && 'skip' in parsed;
}
