/**
 * Good and bad event counts over a rolling window, in memory that does not grow with traffic.
 * The window is cut into equal buckets — as many as fit at one second each, at most 1,440 (a
 * 28-day window: 28-minute buckets; 1 hour: 2.5 s) — kept in a ring. Bucket k holds the events
 * of [k·w, (k+1)·w); the window at time t is the current bucket and the N − 1 before it, so it
 * covers the last W less at most one bucket: the oldest bucket leaves whole when a new one
 * starts. Totals are kept as buckets enter and leave; counts are integers, so they stay exact.
 */
import type { Ms } from '../request/units.ts';

export const MAX_BUCKETS = 1_440;
export const MIN_BUCKET_MS = 1_000;

/** How a window of `windowMs` is bucketed. */
export function bucketing(windowMs: Ms): { readonly widthMs: Ms; readonly count: number } {
  const widthMs = Math.max(MIN_BUCKET_MS, Math.ceil(windowMs / MAX_BUCKETS));
  return { widthMs, count: Math.max(1, Math.ceil(windowMs / widthMs)) };
}

export class RollingCounts {
  readonly widthMs: Ms;
  private readonly good: Float64Array;
  private readonly bad: Float64Array;
  /** Index of the newest bucket seen (NaN before the first event or read). */
  private head = NaN;
  private goodSum = 0;
  private badSum = 0;

  constructor(windowMs: Ms) {
    const b = bucketing(windowMs);
    this.widthMs = b.widthMs;
    this.good = new Float64Array(b.count);
    this.bad = new Float64Array(b.count);
  }

  add(nowMs: Ms, good: number, bad: number): void {
    const slot = this.advance(nowMs);
    this.good[slot] += good;
    this.bad[slot] += bad;
    this.goodSum += good;
    this.badSum += bad;
  }

  /** The counts in the window that ends at `nowMs`. */
  read(nowMs: Ms): { readonly good: number; readonly bad: number } {
    this.advance(nowMs);
    return { good: this.goodSum, bad: this.badSum };
  }

  /** Moves the window to `nowMs`, dropping the buckets it left; returns the current slot. */
  private advance(nowMs: Ms): number {
    const n = this.good.length;
    const k = Math.floor(nowMs / this.widthMs);
    const slotOf = (i: number) => ((i % n) + n) % n;
    if (Number.isNaN(this.head) || k - this.head >= n) {
      this.good.fill(0);
      this.bad.fill(0);
      this.goodSum = 0;
      this.badSum = 0;
      this.head = k;
    }
    // A clock never runs backwards; an event stamped before the newest bucket counts in it.
    for (; this.head < k;) {
      const slot = slotOf(++this.head);
      this.goodSum -= this.good[slot];
      this.badSum -= this.bad[slot];
      this.good[slot] = 0;
      this.bad[slot] = 0;
    }
    return slotOf(this.head);
  }
}
