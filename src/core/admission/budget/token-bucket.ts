/**
 * A continuously refilling token bucket as plain data, with pure functions over it. Capacity is
 * a tenant's per-window limit and the rate is `capacity / windowMs`, so an empty bucket is full
 * again one window later. Main rule: the level may go below zero — actual usage settled after
 * the fact can exceed the estimate taken at admission, and that debt is repaid by refill before
 * anything else passes. Every function returns a new bucket; none mutates its argument.
 */
import type { Ms } from '../../request/units.ts';

/**
 * Refill is floating-point arithmetic: a client retrying exactly at the advertised time must not
 * miss by a rounding error, so a level short by at most this fraction of the amount is enough.
 */
const ROUNDING = 1e-9;

export interface TokenBucket {
  readonly level: number;
  /** When `level` was last brought up to date. */
  readonly updatedMs: Ms;
}

/** A bucket holding its whole capacity: a tenant starts with a full window's allowance. */
export function fullBucket(capacity: number, nowMs: Ms): TokenBucket {
  return { level: capacity, updatedMs: nowMs };
}

/** The bucket as it stands at `nowMs`. A clock that steps back adds nothing rather than draining. */
export function refill(
  bucket: TokenBucket,
  capacity: number,
  ratePerMs: number,
  nowMs: Ms,
): TokenBucket {
  const elapsed = Math.max(0, nowMs - bucket.updatedMs);
  // Clamping also covers a quota lowered since the bucket was last touched.
  const level = Math.min(capacity, bucket.level + elapsed * ratePerMs);
  return { level, updatedMs: Math.max(nowMs, bucket.updatedMs) };
}

/** Draws `amount`; no floor, so a draw larger than the level leaves debt. */
export function take(
  bucket: TokenBucket,
  amount: number,
  capacity: number,
  ratePerMs: number,
  nowMs: Ms,
): TokenBucket {
  const b = refill(bucket, capacity, ratePerMs, nowMs);
  return { level: b.level - amount, updatedMs: b.updatedMs };
}

/** Returns `amount` (an over-estimate being corrected); never above capacity. */
export function giveBack(
  bucket: TokenBucket,
  amount: number,
  capacity: number,
  ratePerMs: number,
  nowMs: Ms,
): TokenBucket {
  const b = refill(bucket, capacity, ratePerMs, nowMs);
  return { level: Math.min(capacity, b.level + amount), updatedMs: b.updatedMs };
}

/**
 * Milliseconds from `nowMs` until the level reaches `amount`: 0 when it already does, Infinity
 * when it never will (`amount` exceeds the capacity, or the bucket does not refill).
 */
export function msUntil(
  bucket: TokenBucket,
  amount: number,
  capacity: number,
  ratePerMs: number,
  nowMs: Ms,
): Ms {
  const b = refill(bucket, capacity, ratePerMs, nowMs);
  if (b.level >= amount - ROUNDING * Math.max(1, Math.abs(amount))) return 0;
  if (amount > capacity || ratePerMs <= 0) return Infinity;
  return (amount - b.level) / ratePerMs;
}

/**
 * A wait turned into a Retry-After: whole milliseconds, at least 1, at most `capMs`. The cap is
 * the window: past it the client asks again and gets a fresh answer, which matters because
 * settles that return over-estimates can shorten a wait, and an infinite wait (the request is
 * larger than the whole window's allowance) still needs a finite header.
 */
export function boundedRetryMs(waitMs: Ms, capMs: Ms): Ms {
  return Math.max(1, Math.min(capMs, Math.ceil(waitMs)));
}
