/**
 * BurstGPT (Wang et al., 2024): `Timestamp,Model,Request tokens,Response tokens,Total tokens,
 * Log Type`, timestamps in seconds. BurstGPT records failed requests with 0 response tokens;
 * those rows are skipped and counted as `failed` (there is no output to serve, and the
 * simulator models failures itself). Rows with 0 request tokens are skipped as `emptyPrompt`.
 * Model and log type are not used.
 */
import { hasColumns, headerColumns, splitCsv } from './csv-header.ts';
import { cellNumber, timestamp, tokens } from './fields.ts';
import { HEADER, type TraceFormat } from './trace-format.ts';

const COLUMNS = ['Timestamp', 'Request tokens', 'Response tokens'] as const;

export const burstGptFormat: TraceFormat = {
  name: 'burstgpt',
  detect: (firstLine) => hasColumns(firstLine, COLUMNS),
  open(file) {
    let cols: number[] | undefined;
    return (line, lineNo) => {
      const at = { file, line: lineNo };
      if (!cols) {
        cols = headerColumns(at, line, COLUMNS);
        return HEADER;
      }
      const cells = splitCsv(line);
      const seconds = timestamp(at, 'Timestamp', cellNumber(at, 'Timestamp', cells[cols[0]]));
      const input = tokens(
        at,
        'Request tokens',
        cellNumber(at, 'Request tokens', cells[cols[1]]),
        0,
      );
      const output = tokens(
        at,
        'Response tokens',
        cellNumber(at, 'Response tokens', cells[cols[2]]),
        0,
      );
      if (output === 0) return { skip: 'failed' };
      if (input === 0) return { skip: 'emptyPrompt' };
      return { tMs: seconds * 1000, inputTokens: input, outputTokens: output };
    };
  },
};
