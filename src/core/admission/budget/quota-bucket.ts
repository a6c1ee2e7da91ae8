/**
 * One windowed quota (tokens or GPU milliseconds per window) as a token bucket: capacity is the
 * limit and the rate is `limit / windowMs`. Main rule: a tenant never charged holds a full
 * bucket, so state is created only when something is charged and an absent bucket reads as full.
 */
import type { Ms } from '../../request/units.ts';
import { fullBucket, giveBack, msUntil, refill, take, type TokenBucket } from './token-bucket.ts';

/** Wait until the quota's bucket holds `need`; 0 when the tenant has no such limit. */
export function quotaWaitMs(
  bucket: TokenBucket | null,
  need: number,
  limit: number | undefined,
  windowMs: Ms,
  nowMs: Ms,
): Ms {
  if (limit === undefined) return 0;
  return msUntil(bucket ?? fullBucket(limit, nowMs), need, limit, limit / windowMs, nowMs);
}

/** The quota's level at `nowMs`: a bucket never charged is full. */
export function quotaLevel(
  bucket: TokenBucket | null,
  limit: number,
  windowMs: Ms,
  nowMs: Ms,
): number {
  return bucket === null ? limit : refill(bucket, limit, limit / windowMs, nowMs).level;
}

/** Takes an admitted request's estimate. */
export function quotaCharge(
  bucket: TokenBucket | null,
  amount: number,
  limit: number,
  windowMs: Ms,
  nowMs: Ms,
): TokenBucket {
  return take(bucket ?? fullBucket(limit, nowMs), amount, limit, limit / windowMs, nowMs);
}

/** Applies actual − estimated: a positive delta is debt, a negative one is given back. */
export function quotaCorrect(
  bucket: TokenBucket,
  delta: number,
  limit: number,
  windowMs: Ms,
  nowMs: Ms,
): TokenBucket {
  const rate = limit / windowMs;
  return delta >= 0
    ? take(bucket, delta, limit, rate, nowMs)
    : giveBack(bucket, -delta, limit, rate, nowMs);
}
