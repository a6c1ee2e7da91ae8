/**
 * Summary statistics for the workload tests' distribution checks (test-only helper).
 */
export function mean(xs: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i];
  return s / xs.length;
}

export function variance(xs: ArrayLike<number>): number {
  const m = mean(xs);
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += (xs[i] - m) ** 2;
  return s / (xs.length - 1);
}

/** Coefficient of variation: standard deviation over mean. */
export function cv(xs: ArrayLike<number>): number {
  return Math.sqrt(variance(xs)) / mean(xs);
}

/** Whether `actual` is within `relative` of `expected`. */
export function near(actual: number, expected: number, relative: number): boolean {
  return Math.abs(actual - expected) <= relative * Math.abs(expected);
}
