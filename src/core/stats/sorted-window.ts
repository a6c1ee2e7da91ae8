/**
 * The last `capacity` values of a stream, held twice: in arrival order (a ring, to know which
 * value leaves next) and sorted (so any quantile is O(1)). Each add costs one binary search
 * and one memmove of at most `capacity` doubles — cheap enough to run once per finished
 * request in a million-request simulation. Storage grows by doubling up to `capacity`, so a
 * window that has seen few values holds little memory.
 */
import { percentileSorted } from './percentile.ts';

const INITIAL_SLOTS = 16;

export class SortedWindow {
  readonly capacity: number;
  /** Arrival order. Until the window is full the oldest value sits at index 0. */
  private ring: Float64Array;
  private sorted: Float64Array;
  /** Index of the oldest value once full. */
  private head = 0;
  private n = 0;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`SortedWindow capacity: expected an integer ≥ 1, got ${capacity}`);
    }
    this.capacity = capacity;
    const slots = Math.min(capacity, INITIAL_SLOTS);
    this.ring = new Float64Array(slots);
    this.sorted = new Float64Array(slots);
  }

  get size(): number {
    return this.n;
  }

  /**
   * Where in arrival order (0 to `capacity` − 1) the next `add` puts its value: a window keeping
   * something per value beside it (`CensoredWindow`) reads the oldest's there, before it leaves.
   */
  get nextSlot(): number {
    return this.n < this.capacity ? this.n : this.head;
  }

  /** Adds `v`; returns the value it pushed out of a full window, if any. */
  add(v: number): number | undefined {
    // NaN has no place in an order; letting one in would corrupt every later quantile.
    if (Number.isNaN(v)) throw new RangeError('SortedWindow.add: NaN');
    if (this.n < this.capacity) {
      if (this.n === this.ring.length) this.grow();
      const n = this.n;
      const p = upperBound(this.sorted, n, v);
      this.sorted.copyWithin(p + 1, p, n);
      this.sorted[p] = v;
      this.ring[n] = v;
      this.n = n + 1;
      return undefined;
    }
    const evicted = this.ring[this.head];
    this.ring[this.head] = v;
    this.head = this.head + 1 === this.capacity ? 0 : this.head + 1;
    if (evicted === v) return evicted;
    const sorted = this.sorted;
    // Remove and insert in one shift: only the values between the two positions move.
    const i = lowerBound(sorted, this.n, evicted);
    const p = upperBound(sorted, this.n, v);
    if (p <= i) {
      sorted.copyWithin(p + 1, p, i);
      sorted[p] = v;
    } else {
      sorted.copyWithin(i, i + 1, p);
      sorted[p - 1] = v;
    }
    return evicted;
  }

  /** Fraction of the values ≤ `x` (0 when empty): the empirical CDF. */
  cdf(x: number): number {
    return this.n === 0 ? 0 : upperBound(this.sorted, this.n, x) / this.n;
  }

  /** Calls `f` with each value now in the window and its slot (see `nextSlot`), oldest first. */
  forEachOldestFirst(f: (v: number, slot: number) => void): void {
    const start = this.n < this.capacity ? 0 : this.head;
    for (let k = 0; k < this.n; k++) {
      const slot = (start + k) % this.capacity;
      f(this.ring[slot], slot);
    }
  }

  /** The values now in the window, ascending: a view, valid until the next `add`. */
  ascending(): Float64Array {
    return this.sorted.subarray(0, this.n);
  }

  /** numpy-linear percentile, q in [0, 100], of the values now in the window; NaN when empty. */
  quantile(q: number): number {
    const n = this.n;
    return percentileSorted(n === this.sorted.length ? this.sorted : this.sorted.subarray(0, n), q);
  }

  private grow(): void {
    const slots = Math.min(this.capacity, this.ring.length * 2);
    const ring = new Float64Array(slots);
    const sorted = new Float64Array(slots);
    ring.set(this.ring);
    sorted.set(this.sorted);
    this.ring = ring;
    this.sorted = sorted;
  }
}

/** First index in sorted[0, n) whose value is ≥ v. */
export function lowerBound(sorted: ArrayLike<number>, n: number, v: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First index in sorted[0, n) whose value is > v. */
export function upperBound(sorted: ArrayLike<number>, n: number, v: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] <= v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
