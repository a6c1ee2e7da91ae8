/**
 * Percentiles exactly as numpy computes them by default ("linear"): for q in [0, 100] over n
 * sorted values, rank h = (n − 1)·q/100, interpolated between the values at floor(h) and
 * ceil(h). vLLM's benchmark client reports this way, so Goodput's numbers compare directly.
 */

/** `sorted` must be ascending. Returns NaN for an empty input. */
export function percentileSorted(sorted: ArrayLike<number>, q: number): number {
  const n = sorted.length;
  if (n === 0) return NaN;
  const h = ((n - 1) * q) / 100;
  const lo = Math.floor(h);
  const hi = Math.min(lo + 1, n - 1);
  return sorted[lo] + (h - lo) * (sorted[hi] - sorted[lo]);
}

export function mean(values: ArrayLike<number>): number {
  if (values.length === 0) return NaN;
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += values[i];
  return sum / values.length;
}

export interface Summary {
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  readonly count: number;
}

/** Sorts a copy and summarises it. Empty input gives zeros with count 0 (a report has no NaN). */
export function summarize(values: ArrayLike<number>): Summary {
  const sorted = Float64Array.from(values as ArrayLike<number>).sort();
  if (sorted.length === 0) return { mean: 0, p50: 0, p90: 0, p99: 0, max: 0, count: 0 };
  return {
    mean: mean(sorted),
    p50: percentileSorted(sorted, 50),
    p90: percentileSorted(sorted, 90),
    p99: percentileSorted(sorted, 99),
    max: sorted[sorted.length - 1],
    count: sorted.length,
  };
}
