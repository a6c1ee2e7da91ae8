/**
 * How simulated clients behave when things go wrong: an optional timeout after which they
 * cancel, and retries. A `disciplined` client keeps its half of the overload contract: backoff
 * with full jitter never sooner than the server's Retry-After, one idempotency key across
 * attempts, no retry of a refusal that says none can succeed (`x-should-retry: false`), and
 * never a retry of a stream that already produced tokens. A `naive` client
 * retries at once, ignores Retry-After, sends each attempt as a new request, and treats a
 * timed-out answer as lost even if tokens had arrived (as a non-streaming client would).
 */
import type { Rng } from '../core/ports/rng.ts';
import type { Ms } from '../core/request/units.ts';
import { fullJitterBackoffMs } from '../core/resilience/backoff.ts';

export interface ClientBehaviour {
  /** Cancel an attempt that has not finished this long after it was sent. */
  readonly timeoutMs?: Ms;
  /** Attempts per logical request, the first included (1 = never retry). */
  readonly maxAttempts: number;
  readonly backoffBaseMs: Ms;
  readonly backoffCapMs: Ms;
  readonly retryMode: RetryMode;
}

export const RETRY_MODES = ['disciplined', 'naive'] as const;
export type RetryMode = (typeof RETRY_MODES)[number];

export const DEFAULT_CLIENT: ClientBehaviour = {
  retryMode: 'disciplined',
  maxAttempts: 1,
  backoffBaseMs: 500,
  backoffCapMs: 30_000,
};

/**
 * Delay before attempt `attempt + 1`, after `attempt` attempts have failed: uniform in
 * [0, min(cap, base · 2^(attempt−1))] (AWS "full jitter"), raised to Retry-After when given.
 */
export function retryDelayMs(c: ClientBehaviour, attempt: number, rng: Rng, retryAfterMs?: Ms): Ms {
  if (c.retryMode === 'naive') return 0;
  return fullJitterBackoffMs(c.backoffBaseMs, c.backoffCapMs, attempt, rng.next(), retryAfterMs);
}
