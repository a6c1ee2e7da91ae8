/**
 * A multiset of samples stored as (value, count) runs. Token gaps arrive in runs — every
 * sequence decoding in one engine step sees the same gap — so hundreds of millions of pooled
 * gaps fit in a few million runs, and percentiles stay exact (numpy's linear definition over
 * the expanded multiset). Runs live in fixed-size chunks, so growing never copies.
 */
import type { Summary } from '../stats/percentile.ts';

const CHUNK = 1 << 16;

export class RunLengthSamples {
  private readonly valueChunks: Float64Array[] = [];
  private readonly countChunks: Uint32Array[] = [];
  private values = new Float64Array(0);
  private counts = new Uint32Array(0);
  /** Runs in the last chunk. */
  private fill = CHUNK;
  private runs = 0;
  private total = 0;
  private lastValue = NaN;

  get count(): number {
    return this.total;
  }

  add(value: number, count = 1): void {
    this.total += count;
    if (value === this.lastValue && this.counts[this.fill - 1] + count <= 0xffffffff) {
      this.counts[this.fill - 1] += count;
      return;
    }
    if (this.fill === CHUNK) {
      this.values = new Float64Array(CHUNK);
      this.counts = new Uint32Array(CHUNK);
      this.valueChunks.push(this.values);
      this.countChunks.push(this.counts);
      this.fill = 0;
    }
    this.values[this.fill] = value;
    this.counts[this.fill] = count;
    this.fill++;
    this.runs++;
    this.lastValue = value;
  }

  /**
   * Summary of the multiset minus `exclude` (samples recorded here that must not count, e.g.
   * the gaps of requests that later failed). Every excluded value must have been added.
   */
  summarize(exclude: ArrayLike<number> = []): Summary {
    // Distinct values, sorted natively; each run's count lands on its value by binary search.
    // (A comparator sort or a Map over millions of runs would dominate the whole simulation.)
    const all = new Float64Array(this.runs);
    this.forEachRun((v, _c, i) => (all[i] = v));
    all.sort();
    let distinct = 0;
    for (let i = 0; i < all.length; i++)
      if (i === 0 || all[i] !== all[i - 1]) all[distinct++] = all[i];
    const values = all.subarray(0, distinct);
    const counts = new Float64Array(distinct);
    this.forEachRun((v, c) => (counts[lowerBound(values, v)] += c));
    let n = this.total;
    for (let k = 0; k < exclude.length; k++) {
      const at = lowerBound(values, exclude[k]);
      if (at < values.length && values[at] === exclude[k] && counts[at] > 0) {
        counts[at]--;
        n--;
      }
    }
    if (n === 0) return { mean: 0, p50: 0, p90: 0, p99: 0, max: 0, count: 0 };
    let sum = 0;
    let max = 0;
    for (let i = 0; i < values.length; i++) {
      sum += values[i] * counts[i];
      if (counts[i] > 0) max = values[i];
    }
    const at = (q: number) => quantile(values, counts, n, q);
    return { mean: sum / n, p50: at(50), p90: at(90), p99: at(99), max, count: n };
  }

  private forEachRun(fn: (value: number, count: number, index: number) => void): void {
    let index = 0;
    for (let c = 0; c < this.valueChunks.length; c++) {
      const values = this.valueChunks[c];
      const counts = this.countChunks[c];
      const size = c === this.valueChunks.length - 1 ? this.fill : CHUNK;
      for (let i = 0; i < size; i++) fn(values[i], counts[i], index++);
    }
  }
}

/** Value at 0-based index `k` of the expanded multiset. */
function nth(values: Float64Array, counts: Float64Array, k: number): number {
  let seen = 0;
  for (let i = 0; i < values.length; i++) {
    seen += counts[i];
    if (k < seen) return values[i];
  }
  return values[values.length - 1];
}

function quantile(values: Float64Array, counts: Float64Array, n: number, q: number): number {
  const h = ((n - 1) * q) / 100;
  const lo = Math.floor(h);
  const a = nth(values, counts, lo);
  const b = nth(values, counts, Math.min(lo + 1, n - 1));
  return a + (h - lo) * (b - a);
}

function lowerBound(values: Float64Array, v: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (values[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
