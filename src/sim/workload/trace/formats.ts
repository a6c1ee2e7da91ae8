/**
 * The trace formats Goodput reads, registered in one table, and detection: the first format
 * whose `detect` accepts the file's first non-blank line. Formats recognise distinct header
 * columns or JSON keys, so at most one matches a real file.
 */
import type { TraceFormatName } from '../workload-options.ts';
import { azureFormat } from './azure-format.ts';
import { burstGptFormat } from './burstgpt-format.ts';
import { mooncakeFormat } from './mooncake-format.ts';
import { nativeFormat } from './native-format.ts';
import { decisionsFormat } from './decisions-format.ts';
import type { TraceFormat } from './trace-format.ts';

export const TRACE_FORMATS: Readonly<Record<TraceFormatName, TraceFormat>> = {
  azure: azureFormat,
  mooncake: mooncakeFormat,
  burstgpt: burstGptFormat,
  native: nativeFormat,
  decisions: decisionsFormat,
};

export function detectTraceFormat(firstLine: string): TraceFormat | undefined {
  return Object.values(TRACE_FORMATS).find((f) => f.detect(firstLine));
}
