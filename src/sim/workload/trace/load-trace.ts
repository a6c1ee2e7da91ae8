/**
 * Loads a trace file into a TraceTable: picks the format (given, or detected from the first
 * non-blank line), streams the lines through it, and checks the result holds requests. Blank
 * lines are allowed anywhere; every other line is a header or a row. All parsing happens here,
 * before the simulation starts, so a malformed line fails the run at once with its location.
 */
import { statSync } from 'node:fs';
import { ConfigError, InputError } from '../../../core/errors.ts';
import { WORKLOAD_FLAGS, type TraceFormatName } from '../workload-options.ts';
import { detectTraceFormat, TRACE_FORMATS } from './formats.ts';
import { readLines } from './read-lines.ts';
import { HEADER, PART, isSkipped, type LineParser, type TraceFormat } from './trace-format.ts';
import { finishTable, TableBuilder, type TraceTable } from './trace-table.ts';

export function loadTrace(file: string, format?: TraceFormatName): TraceTable {
  if (!isFile(file)) throw new ConfigError(WORKLOAD_FLAGS.trace, 'a readable trace file', file);
  const builder = new TableBuilder();
  const skipped: Record<string, number> = {};
  let chosen: TraceFormat | undefined;
  let parse: LineParser | undefined;
  let lineNo = 0;
  let rowsRead = 0;
  for (const line of readLines(file, WORKLOAD_FLAGS.trace)) {
    lineNo++;
    if (line.trim() === '') continue;
    if (!parse) {
      chosen = format ? TRACE_FORMATS[format] : detectTraceFormat(line);
      if (!chosen) throw undetected(file, lineNo, line);
      parse = chosen.open(file);
    }
    const parsed = parse(line, lineNo);
    if (parsed === HEADER || parsed === PART) continue;
    rowsRead++;
    if (isSkipped(parsed)) skipped[parsed.skip] = (skipped[parsed.skip] ?? 0) + 1;
    else builder.add(parsed);
  }
  if (!chosen) throw new InputError(file, Math.max(lineNo, 1), 'trace', 'the file is empty');
  for (const row of parse?.end?.(lineNo) ?? []) {
    rowsRead++;
    builder.add(row);
  }
  if (builder.rows === 0) {
    const why =
      rowsRead === 0
        ? 'no requests: the file has no data rows'
        : `no requests: all ${rowsRead} rows were skipped (${JSON.stringify(skipped)})`;
    throw new InputError(file, lineNo, 'trace', why);
  }
  return finishTable(builder, {
    file,
    format: chosen.name,
    formatDetected: format === undefined,
    rowsRead,
    skipped,
  });
}

function undetected(file: string, lineNo: number, line: string): InputError {
  const shown = JSON.stringify(line.length > 80 ? line.slice(0, 80) + '…' : line);
  return new InputError(
    file,
    lineNo,
    'format',
    `cannot tell the trace format from ${shown}: expected an Azure or BurstGPT CSV header, ` +
      `or a Mooncake or native JSON line; pass ${WORKLOAD_FLAGS.traceFormat} to choose one`,
  );
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
