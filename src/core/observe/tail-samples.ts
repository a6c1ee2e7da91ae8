/**
 * Exact high percentiles of one request's token gaps without keeping them all. numpy's linear
 * p99 over n samples reads only the values at ranks floor(h) and floor(h)+1, h = 0.99·(n − 1):
 * both among the ⌈0.01·n⌉ + 1 largest. So for a request expected to produce at most `maxCount`
 * samples, keeping that many of the largest (a tiny sorted array) is exact.
 *
 * The caller counts samples itself and offers only those above `floor` — the smallest kept
 * value once the array is full — so the per-token hot path is one comparison on a field the
 * caller already holds, not a visit to this object.
 */
export class TailSamples {
  private readonly top: Float64Array;
  private size = 0;
  /** Samples at or below this cannot change any percentile this object answers. */
  floor = -Infinity;

  constructor(maxCount: number) {
    this.top = new Float64Array(keep(Math.max(1, maxCount)));
  }

  get max(): number {
    return this.size === 0 ? 0 : this.top[this.size - 1];
  }

  /** Keeps `x` if it is among the largest; returns the new floor. */
  add(x: number): number {
    const top = this.top;
    if (this.size < top.length) {
      let i = this.size++;
      while (i > 0 && top[i - 1] > x) {
        top[i] = top[i - 1];
        i--;
      }
      top[i] = x;
      if (this.size === top.length) this.floor = top[0];
    } else if (x > top[0]) {
      let i = 0;
      while (i + 1 < top.length && top[i + 1] < x) {
        top[i] = top[i + 1];
        i++;
      }
      top[i] = x;
      this.floor = top[0];
    }
    return this.floor;
  }

  /** numpy-linear p99 of `n` samples, of which every one above `floor` was added. NaN for n = 0. */
  p99(n: number): number {
    if (n === 0) return NaN;
    const h = ((n - 1) * 99) / 100;
    const lo = Math.floor(h);
    const hi = Math.min(lo + 1, n - 1);
    return this.rank(n, lo) + (h - lo) * (this.rank(n, hi) - this.rank(n, lo));
  }

  /** Value at ascending rank r of all n samples, read from the kept top values. */
  private rank(n: number, r: number): number {
    const fromTop = n - 1 - r;
    if (fromTop >= this.size) return NaN;
    return this.top[this.size - 1 - fromTop];
  }
}

/** How many of the largest samples p99 of up to n samples can read. */
function keep(n: number): number {
  // Ranks floor(h) and floor(h) + 1 sit n − floor(h) places from the top; that count only grows
  // with n, so the bound at n covers every smaller count too.
  return Math.min(n, n - Math.floor(((n - 1) * 99) / 100) + 1);
}
