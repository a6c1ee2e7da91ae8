/**
 * Agent tool calls for a synthetic workload, from `--tool-calls N:WAIT_MS:RESULT_TOKENS`: each
 * request pauses N times, evenly spaced through its output (after ⌊output·k/(N+1)⌋ tokens,
 * k = 1…N, points before the first token or at the end dropped), each tool taking an
 * exponentially distributed time of mean WAIT_MS and returning RESULT_TOKENS tokens. Trace rows
 * carry their own (`tool_calls` in the native format).
 */
import { ConfigError } from '../../core/errors.ts';
import type { Rng } from '../../core/ports/rng.ts';
import type { ToolCall } from '../../core/request/request.ts';

export interface ToolCallSpec {
  readonly count: number;
  readonly meanWaitMs: number;
  readonly resultTokens: number;
}

/** The longest mean tool wait taken: a day. Past it, a run's clock overflows to no end. */
const MAX_WAIT_MS = 86_400_000;
const EXPECTED =
  '`N:WAIT_MS:RESULT_TOKENS` (N an integer 1–64, WAIT_MS > 0 and ≤ 86,400,000, RESULT_TOKENS ≥ 0)';

export function parseToolCallSpec(text: string, option = '--tool-calls'): ToolCallSpec {
  const parts = text.trim().split(':');
  const [count, meanWaitMs, resultTokens] = parts.map((p) => (p.trim() === '' ? NaN : Number(p)));
  if (
    parts.length !== 3 ||
    !(Number.isInteger(count) && count >= 1 && count <= 64) ||
    !(meanWaitMs > 0 && meanWaitMs <= MAX_WAIT_MS) ||
    !(Number.isInteger(resultTokens) && resultTokens >= 0)
  ) {
    throw new ConfigError(option, EXPECTED, text);
  }
  return { count, meanWaitMs, resultTokens };
}

export function formatToolCallSpec(s: ToolCallSpec): string {
  return `${s.count}:${s.meanWaitMs}:${s.resultTokens}`;
}

/** The tool calls of a request generating `outputTokens`, its waits drawn from `rng`. */
export function drawToolCalls(spec: ToolCallSpec, outputTokens: number, rng: Rng): ToolCall[] {
  const calls: ToolCall[] = [];
  for (let k = 1; k <= spec.count; k++) {
    // Drawn whether or not the point is kept, so each request uses the same number of draws.
    const waitMs = -spec.meanWaitMs * Math.log(1 - rng.next());
    const afterTokens = Math.floor((outputTokens * k) / (spec.count + 1));
    if (afterTokens < 1 || afterTokens >= outputTokens) continue;
    if (calls.length > 0 && afterTokens <= calls[calls.length - 1].afterTokens) continue;
    calls.push({ afterTokens, waitMs, resultTokens: spec.resultTokens });
  }
  return calls;
}
