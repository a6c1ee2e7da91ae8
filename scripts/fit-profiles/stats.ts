/**
 * Small numeric tools for fitting: medians, isotonic regression, weighted least squares, tail
 * slopes and error statistics. Main rule: errors are relative (|predicted − measured| /
 * measured), reported in percent, with percentiles interpolated linearly as numpy does.
 */

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export function percentile(sorted: readonly number[], p: number): number {
  const pos = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo] + (pos - lo) * (sorted[hi] - sorted[lo]);
}

/** Least-squares non-decreasing fit (pool adjacent violators). */
export function isotonic(y: readonly number[], w?: readonly number[]): number[] {
  const vals: number[] = [];
  const wts: number[] = [];
  const counts: number[] = [];
  y.forEach((v, i) => {
    vals.push(v);
    wts.push(w?.[i] ?? 1);
    counts.push(1);
    while (vals.length > 1 && vals[vals.length - 2] > vals[vals.length - 1]) {
      const b = vals.length - 1;
      const wt = wts[b - 1] + wts[b];
      vals[b - 1] = (vals[b - 1] * wts[b - 1] + vals[b] * wts[b]) / wt;
      wts[b - 1] = wt;
      counts[b - 1] += counts[b];
      vals.pop();
      wts.pop();
      counts.pop();
    }
  });
  return vals.flatMap((v, i) => Array<number>(counts[i]).fill(v));
}

/** Weighted least squares for y ≈ a + b·x; weights 1/y² minimise relative error. */
export function fitLine(
  x: readonly number[],
  y: readonly number[],
  relative = true,
): { a: number; b: number } {
  let sw = 0,
    sx = 0,
    sy = 0,
    sxx = 0,
    sxy = 0;
  x.forEach((xi, i) => {
    const w = relative ? 1 / (y[i] * y[i]) : 1;
    sw += w;
    sx += w * xi;
    sy += w * y[i];
    sxx += w * xi * xi;
    sxy += w * xi * y[i];
  });
  const det = sw * sxx - sx * sx;
  if (Math.abs(det) < 1e-300) return { a: sy / sw, b: 0 };
  const b = (sw * sxy - sx * sy) / det;
  return { a: (sy - b * sx) / sw, b };
}

/** Slope of the top quarter of a curve, for extending it linearly; never negative. */
export function tailSlope(x: readonly number[], y: readonly number[]): number {
  const from = x[x.length - 1] * 0.75;
  const idx = x.map((_, i) => i).filter((i) => x[i] >= from);
  if (idx.length < 2)
    return Math.max(0, (y[y.length - 1] - y[y.length - 2]) / (x[x.length - 1] - x[x.length - 2]));
  return Math.max(
    0,
    fitLine(
      idx.map((i) => x[i]),
      idx.map((i) => y[i]),
      false,
    ).b,
  );
}

/** Log-log slope of the top quarter of a curve, for extending it as a power law. */
export function tailExponent(x: readonly number[], y: readonly number[]): number {
  const from = x[x.length - 1] * 0.75;
  const idx = x.map((_, i) => i).filter((i) => x[i] >= from && y[i] > 0);
  return Math.max(
    0,
    fitLine(
      idx.map((i) => Math.log(x[i])),
      idx.map((i) => Math.log(y[i])),
      false,
    ).b,
  );
}

export interface ErrorStats {
  readonly rows: number;
  readonly mapePct: number;
  readonly p50Pct: number;
  readonly p90Pct: number;
  readonly p99Pct: number;
  readonly maxPct: number;
  /** Share of rows predicted more than 10% off, in percent. */
  readonly over10Pct: number;
}

export function errorStats(pred: readonly number[], actual: readonly number[]): ErrorStats {
  const e = pred.map((p, i) => (Math.abs(p - actual[i]) / actual[i]) * 100).sort((a, b) => a - b);
  const r = (v: number) => Math.round(v * 100) / 100;
  return {
    rows: e.length,
    mapePct: r(e.reduce((s, v) => s + v, 0) / e.length),
    p50Pct: r(percentile(e, 50)),
    p90Pct: r(percentile(e, 90)),
    p99Pct: r(percentile(e, 99)),
    maxPct: r(e[e.length - 1]),
    over10Pct: r((e.filter((v) => v > 10).length / e.length) * 100),
  };
}

/** Rounds to `digits` significant digits, so committed JSON is short and stable. */
export function sig(v: number, digits = 5): number {
  return v === 0 ? 0 : Number(v.toPrecision(digits));
}

/**
 * For check points: the index within ±reach of `i` whose value departs least from the median of
 * its own ±halfWindow neighbours — a row that agrees with its neighbours, not a one-row kernel
 * spike that no non-decreasing curve can follow. Ties go to the index nearest `i`.
 */
export function typicalIndex(
  values: readonly number[],
  i: number,
  reach = 2,
  halfWindow = 3,
): number {
  let best = i;
  let bestDev = Infinity;
  for (let d = 0; d <= reach; d++) {
    for (const j of d === 0 ? [i] : [i - d, i + d]) {
      if (j < 0 || j >= values.length) continue;
      const local = median(values.slice(Math.max(0, j - halfWindow), j + halfWindow + 1));
      const dev = Math.abs(values[j] - local) / local;
      if (dev < bestDev - 1e-12) {
        best = j;
        bestDev = dev;
      }
    }
  }
  return best;
}
