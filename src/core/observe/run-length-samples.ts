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
    const { values, counts } = this.distinct();
    let n = this.total;
    // The exclusions sorted too, so both are walked once.
    const out = Float64Array.from(exclude).sort();
    let at = 0;
    for (let k = 0; k < out.length; k++) {
      while (at < values.length && values[at] < out[k]) at++;
      if (at < values.length && values[at] === out[k] && counts[at] > 0) {
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
    const q = (p: number) => quantile(values, counts, n, p);
    return { mean: sum / n, p50: q(50), p90: q(90), p99: q(99), max, count: n };
  }

  /**
   * The distinct values ascending, each with its total count. The runs are sorted by a radix
   * sort over their doubles' 64 bits, counts carried along (`radixSort`). (Sorting the values
   * natively and then finding each run's value among them, by binary search or a bucket index,
   * took most of the time; a comparator sort or a Map over millions of runs would dominate the
   * whole simulation.)
   */
  private distinct(): { values: Float64Array; counts: Float64Array } {
    const size = this.runs;
    // Each run's double as its two 32-bit words, in a buffer that ends up holding the values.
    const unsorted = new Uint32Array(2 * size);
    const unsortedCounts = new Uint32Array(size);
    let at = 0;
    for (let c = 0; c < this.valueChunks.length; c++) {
      const n = c === this.valueChunks.length - 1 ? this.fill : CHUNK;
      unsorted.set(new Uint32Array(this.valueChunks[c].buffer, 0, 2 * n), 2 * at);
      unsortedCounts.set(this.countChunks[c].subarray(0, n), at);
      at += n;
    }
    // Bits that order as the doubles do: a negative double's inverted, a positive one's sign set.
    for (let i = 0; i < 2 * size; i += 2) {
      const h = unsorted[i + HIGH_WORD];
      if (h >>> 31 === 1) {
        unsorted[i + HIGH_WORD] = ~h;
        unsorted[i + LOW_WORD] = ~unsorted[i + LOW_WORD];
      } else unsorted[i + HIGH_WORD] = h | 0x80000000;
    }
    const { keys, counts: runCounts } = radixSort(unsorted, unsortedCounts);
    // Back to doubles in place, equal ones (0 and −0 among them) merged.
    const values = new Float64Array(keys.buffer);
    const counts = new Float64Array(size);
    let distinct = 0;
    for (let i = 0; i < size; i++) {
      const h = keys[2 * i + HIGH_WORD];
      if (h >>> 31 === 0) {
        keys[2 * i + HIGH_WORD] = ~h;
        keys[2 * i + LOW_WORD] = ~keys[2 * i + LOW_WORD];
      } else keys[2 * i + HIGH_WORD] = h & 0x7fffffff;
      const v = values[i];
      if (distinct > 0 && values[distinct - 1] === v) counts[distinct - 1] += runCounts[i];
      else {
        values[distinct] = v;
        counts[distinct++] = runCounts[i];
      }
    }
    return { values: values.subarray(0, distinct), counts: counts.subarray(0, distinct) };
  }
}

/**
 * Sorts 64-bit keys (two words each, `HIGH_WORD` the more significant) ascending as unsigned
 * numbers, each key's count moved with it: four passes of 16 bits, least significant first, a
 * pass whose digit is the same in every key skipped. Returns the sorted arrays (the inputs', or
 * the scratch ones').
 */
function radixSort(
  keysIn: Uint32Array<ArrayBuffer>,
  countsIn: Uint32Array<ArrayBuffer>,
): { keys: Uint32Array<ArrayBuffer>; counts: Uint32Array<ArrayBuffer> } {
  const size = countsIn.length;
  let keys = keysIn;
  let counts = countsIn;
  let keysTo = new Uint32Array(keys.length);
  let countsTo = new Uint32Array(size);
  const offsets = new Uint32Array(1 << 16);
  for (let pass = 0; pass < 4; pass++) {
    const word = pass < 2 ? LOW_WORD : HIGH_WORD;
    const shift = pass % 2 === 0 ? 0 : 16;
    offsets.fill(0);
    for (let i = 0; i < size; i++) offsets[(keys[2 * i + word] >>> shift) & 0xffff]++;
    if (size === 0 || offsets[(keys[word] >>> shift) & 0xffff] === size) continue;
    let sum = 0;
    for (let d = 0; d < offsets.length; d++) {
      const c = offsets[d];
      offsets[d] = sum;
      sum += c;
    }
    for (let i = 0; i < size; i++) {
      const to = offsets[(keys[2 * i + word] >>> shift) & 0xffff]++;
      keysTo[2 * to] = keys[2 * i];
      keysTo[2 * to + 1] = keys[2 * i + 1];
      countsTo[to] = counts[i];
    }
    [keys, keysTo] = [keysTo, keys];
    [counts, countsTo] = [countsTo, counts];
  }
  return { keys, counts };
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

/** Which 32-bit word of a double holds its sign, exponent and top mantissa bits. */
const HIGH_WORD = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;
const LOW_WORD = 1 - HIGH_WORD;
