/**
 * Exponential backoff with full jitter (AWS): the delay before attempt `attempt + 1`, after
 * `attempt` failed, is uniform in [0, min(cap, base · 2^(attempt−1))] — `u` is the uniform draw
 * in [0, 1) — and never sooner than the server's Retry-After when it sent one. The simulated
 * clients and the live client helper both use this one formula.
 */
import type { Ms } from '../request/units.ts';

export function fullJitterBackoffMs(
  baseMs: Ms,
  capMs: Ms,
  attempt: number,
  u: number,
  retryAfterMs?: Ms,
): Ms {
  const jittered = u * Math.min(capMs, baseMs * 2 ** (attempt - 1));
  return retryAfterMs === undefined ? jittered : Math.max(jittered, retryAfterMs);
}
