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
    // Distinct values, sorted natively; each run's count lands on its value through a bucket
    // index. (A comparator sort or a Map over millions of runs would dominate the whole
    // simulation; so did a binary search over all the values, one cache miss per step.)
    const all = new Float64Array(this.runs);
    this.forEachRun((v, _c, i) => (all[i] = v));
    all.sort();
    let distinct = 0;
    for (let i = 0; i < all.length; i++)
      if (i === 0 || all[i] !== all[i - 1]) all[distinct++] = all[i];
    const values = all.subarray(0, distinct);
    const counts = new Float64Array(distinct);
    const index = new SortedIndex(values);
    this.forEachRun((v, c) => (counts[index.find(v)] += c));
    let n = this.total;
    for (let k = 0; k < exclude.length; k++) {
      const at = index.find(exclude[k]);
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

/** Most buckets a `SortedIndex` keeps (4 MiB of offsets). */
const INDEX_BITS = 20;
const scratch = new Float64Array(1);
const scratchWords = new Uint32Array(scratch.buffer);
/** Which 32-bit word of a double holds its sign, exponent and top mantissa bits. */
const HIGH_WORD = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;

function highWord(v: number): number {
  scratch[0] = v;
  return scratchWords[HIGH_WORD];
}

/**
 * Finds a value's place in a sorted array of distinct values without searching all of it. For
 * non-negative doubles the high 32 bits of the representation order them as the doubles do, so
 * (high − the smallest's high) >> shift names a bucket, and each bucket's entries lie together:
 * a search touches one bucket's offsets and a few neighbouring values. Any value outside the
 * array's buckets, and arrays holding a negative value, fall back to a plain binary search.
 */
class SortedIndex {
  private readonly values: Float64Array;
  private readonly base: number;
  private readonly shift: number;
  /** Bucket b's values are values[start[b] .. start[b + 1]); null: plain search only. */
  private readonly start: Int32Array | null;

  constructor(values: Float64Array) {
    this.values = values;
    const n = values.length;
    if (n === 0 || values[0] < 0 || Object.is(values[0], -0)) {
      this.base = 0;
      this.shift = 0;
      this.start = null;
      return;
    }
    this.base = highWord(values[0]);
    const span = highWord(values[n - 1]) - this.base;
    let shift = 0;
    while (span >>> shift >= 1 << INDEX_BITS) shift++;
    this.shift = shift;
    const buckets = (span >>> shift) + 1;
    const start = new Int32Array(buckets + 1);
    for (let i = 0; i < n; i++) start[((highWord(values[i]) - this.base) >>> shift) + 1]++;
    for (let b = 0; b < buckets; b++) start[b + 1] += start[b];
    this.start = start;
  }

  /** Index of the first value ≥ v. */
  find(v: number): number {
    const start = this.start;
    if (start === null || !(v >= this.values[0])) return lowerBound(this.values, v, 0);
    const b = (highWord(v) - this.base) >>> this.shift;
    if (b + 1 >= start.length) return lowerBound(this.values, v, 0);
    return lowerBound(this.values, v, start[b], start[b + 1]);
  }
}

function lowerBound(
  values: Float64Array,
  v: number,
  from: number,
  to: number = values.length,
): number {
  let lo = from;
  let hi = to;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (values[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
