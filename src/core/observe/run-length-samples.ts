/**
 * A multiset of samples stored as (value, count) runs. Token gaps arrive in runs — every
 * sequence decoding in one engine step sees the same gap — so hundreds of millions of pooled
 * gaps fit in a few million runs, and percentiles stay exact (numpy's linear definition over
 * the expanded multiset).
 */
import type { Summary } from './percentile.ts';

export class RunLengthSamples {
  private values = new Float64Array(1024);
  private counts = new Float64Array(1024);
  private runs = 0;
  private total = 0;

  get count(): number {
    return this.total;
  }

  add(value: number, count = 1): void {
    const last = this.runs - 1;
    if (last >= 0 && this.values[last] === value) {
      this.counts[last] += count;
    } else {
      if (this.runs === this.values.length) this.grow();
      this.values[this.runs] = value;
      this.counts[this.runs] = count;
      this.runs++;
    }
    this.total += count;
  }

  /**
   * Summary of the multiset minus `exclude` (samples recorded here that must not count, e.g.
   * the gaps of requests that later failed). Every excluded value must have been added.
   */
  summarize(exclude: ArrayLike<number> = []): Summary {
    const order = Array.from({ length: this.runs }, (_, i) => i).sort(
      (a, b) => this.values[a] - this.values[b],
    );
    // Merge equal values into unique sorted runs.
    const values: number[] = [];
    const counts: number[] = [];
    for (const i of order) {
      const v = this.values[i];
      if (values.length > 0 && values[values.length - 1] === v)
        counts[counts.length - 1] += this.counts[i];
      else {
        values.push(v);
        counts.push(this.counts[i]);
      }
    }
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

  private grow(): void {
    const values = new Float64Array(this.values.length * 2);
    const counts = new Float64Array(this.counts.length * 2);
    values.set(this.values);
    counts.set(this.counts);
    this.values = values;
    this.counts = counts;
  }
}

/** Value at 0-based index `k` of the expanded multiset. */
function nth(values: number[], counts: number[], k: number): number {
  let seen = 0;
  for (let i = 0; i < values.length; i++) {
    seen += counts[i];
    if (k < seen) return values[i];
  }
  return values[values.length - 1];
}

function quantile(values: number[], counts: number[], n: number, q: number): number {
  const h = ((n - 1) * q) / 100;
  const lo = Math.floor(h);
  const a = nth(values, counts, lo);
  const b = nth(values, counts, Math.min(lo + 1, n - 1));
  return a + (h - lo) * (b - a);
}

function lowerBound(values: number[], v: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (values[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
