/**
 * Azure LLM inference traces 2023 (Patel et al., Splitwise, ISCA 2024):
 * `TIMESTAMP,ContextTokens,GeneratedTokens`, one request per row. Timestamps are wall-clock
 * calendar times, so each row's time is measured from the first row's. Both token counts must be
 * ≥ 1 (the published traces have no zeros).
 */
import { msBetween, parseAzureTimestamp, type CalendarInstant } from './azure-timestamp.ts';
import { hasColumns, headerColumns, splitCsv } from './csv-header.ts';
import { cellNumber, fail, tokens } from './fields.ts';
import { HEADER, type TraceFormat } from './trace-format.ts';

const COLUMNS = ['TIMESTAMP', 'ContextTokens', 'GeneratedTokens'] as const;

export const azureFormat: TraceFormat = {
  name: 'azure',
  detect: (firstLine) => hasColumns(firstLine, COLUMNS),
  open(file) {
    let cols: number[] | undefined;
    let origin: CalendarInstant | undefined;
    return (line, lineNo) => {
      const at = { file, line: lineNo };
      if (!cols) {
        cols = headerColumns(at, line, COLUMNS);
        return HEADER;
      }
      const cells = splitCsv(line);
      const text = cells[cols[0]]?.trim() ?? '';
      const instant = parseAzureTimestamp(text);
      if (!instant) {
        fail(at, 'TIMESTAMP', `expected YYYY-MM-DD HH:MM:SS.fffffff, got ${JSON.stringify(text)}`);
      }
      origin ??= instant;
      return {
        tMs: msBetween(origin, instant),
        inputTokens: tokens(at, 'ContextTokens', cellNumber(at, 'ContextTokens', cells[cols[1]])),
        outputTokens: tokens(
          at,
          'GeneratedTokens',
          cellNumber(at, 'GeneratedTokens', cells[cols[2]]),
        ),
      };
    };
  },
};
