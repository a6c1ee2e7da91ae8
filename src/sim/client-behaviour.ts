/**
 * How simulated clients behave when things go wrong: an optional timeout after which they
 * cancel, and retries with exponential backoff and full jitter that never come sooner than the
 * server's Retry-After. A stream that already produced tokens is never retried.
 */
import type { Rng } from '../core/ports/rng.ts';
import type { Ms } from '../core/request/units.ts';

export interface ClientBehaviour {
  /** Cancel an attempt that has not finished this long after it was sent. */
  readonly timeoutMs?: Ms;
  /** Attempts per logical request, the first included (1 = never retry). */
  readonly maxAttempts: number;
  readonly backoffBaseMs: Ms;
  readonly backoffCapMs: Ms;
}

export const DEFAULT_CLIENT: ClientBehaviour = {
  maxAttempts: 1,
  backoffBaseMs: 500,
  backoffCapMs: 30_000,
};

/**
 * Delay before attempt `attempt + 1`, after `attempt` attempts have failed: uniform in
 * [0, min(cap, base · 2^(attempt−1))] (AWS "full jitter"), raised to Retry-After when given.
 */
export function retryDelayMs(c: ClientBehaviour, attempt: number, rng: Rng, retryAfterMs?: Ms): Ms {
  const ceiling = Math.min(c.backoffCapMs, c.backoffBaseMs * 2 ** (attempt - 1));
  const jittered = rng.next() * ceiling;
  return retryAfterMs === undefined ? jittered : Math.max(jittered, retryAfterMs);
}
