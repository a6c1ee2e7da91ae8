/**
 * Durations as operators write them in a policy file — `30s`, `5m`, `1h`, `28d`: a whole number
 * and one unit. Written back in the largest unit that divides them evenly (`60m` as `1h`).
 */
import type { Ms } from '../request/units.ts';

const UNIT_MS = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1_000 } as const;
type Unit = keyof typeof UNIT_MS;

export const DURATION_PATTERN = /^([1-9][0-9]*)(s|m|h|d)$/;

/** Milliseconds of a duration like `28d`; undefined when it is not one. */
export function parseDuration(text: string): Ms | undefined {
  const m = DURATION_PATTERN.exec(text);
  return m === null ? undefined : Number(m[1]) * UNIT_MS[m[2] as Unit];
}

export function formatDuration(ms: Ms): string {
  for (const [unit, size] of Object.entries(UNIT_MS)) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
