/**
 * Piecewise-linear curves and grids that fitted profiles are made of, evaluated on the hot
 * path. Main rule: evaluation never allocates — one binary search per axis over typed arrays —
 * because the engine asks for a step time millions of times per simulated hour. Consecutive
 * steps ask about nearby sizes, so each axis remembers the segment its last lookup found and
 * tries it first (the answer is the same either way).
 */

/** Linear tail: y_last + slope·(x − x_last). Power tail: y_last·(x / x_last)^exponent. */
export type CurveTail = { kind: 'linear'; slope: number } | { kind: 'power'; exponent: number };

export interface Curve {
  readonly x: Float64Array;
  readonly y: Float64Array;
  readonly tailPower: boolean;
  /** Slope (linear tail) or exponent (power tail). */
  readonly tailParam: number;
  /** The segment the last lookup found: tried first. */
  hint: number;
}

/** Values on a rows × cols lattice, row-major. */
export interface Grid {
  readonly rows: Float64Array;
  readonly cols: Float64Array;
  readonly v: Float64Array;
  /** Past the last row, values grow as (row / last row)^exponent. */
  readonly rowTailExponent: number;
  /** The row and column segments the last lookup found: tried first. */
  rowHint: number;
  colHint: number;
}

export function makeCurve(x: readonly number[], y: readonly number[], tail: CurveTail): Curve {
  return {
    x: Float64Array.from(x),
    y: Float64Array.from(y),
    tailPower: tail.kind === 'power',
    tailParam: tail.kind === 'power' ? tail.exponent : tail.slope,
    hint: 0,
  };
}

export function makeGrid(
  rows: readonly number[],
  cols: readonly number[],
  v: readonly (readonly number[])[],
  rowTailExponent: number,
): Grid {
  return {
    rows: Float64Array.from(rows),
    cols: Float64Array.from(cols),
    v: Float64Array.from(v.flat()),
    rowTailExponent,
    rowHint: 0,
    colHint: 0,
  };
}

/** Index i with xs[i] ≤ v < xs[i+1], for xs[0] ≤ v < xs[last]; `hint` is tried first. */
function segment(xs: Float64Array, v: number, hint: number): number {
  if (xs[hint] <= v && v < xs[hint + 1]) return hint;
  let lo = 0;
  let hi = xs.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] <= v) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** Clamped below the first point (a latency floor), extended by the tail past the last. */
export function curveAt(c: Curve, v: number): number {
  const { x, y } = c;
  const last = x.length - 1;
  if (v <= x[0]) return y[0];
  if (v >= x[last]) {
    return c.tailPower
      ? y[last] * Math.pow(v / x[last], c.tailParam)
      : y[last] + c.tailParam * (v - x[last]);
  }
  const i = segment(x, v, c.hint);
  c.hint = i;
  return y[i] + ((v - x[i]) / (x[i + 1] - x[i])) * (y[i + 1] - y[i]);
}

/**
 * Bilinear inside the lattice. Rows are clamped below and extended as a power law past the last
 * row; columns are clamped below and extended linearly along the last segment.
 */
export function gridAt(g: Grid, row: number, col: number): number {
  const { rows, cols, v } = g;
  const lastR = rows.length - 1;
  const lastC = cols.length - 1;
  let scale = 1;
  let r = row;
  if (r <= rows[0]) r = rows[0];
  else if (r > rows[lastR]) {
    scale = Math.pow(r / rows[lastR], g.rowTailExponent);
    r = rows[lastR];
  }
  const i = r >= rows[lastR] ? lastR - 1 : (g.rowHint = segment(rows, r, g.rowHint));
  const tr = (r - rows[i]) / (rows[i + 1] - rows[i]);
  const c = col <= cols[0] ? cols[0] : col;
  const j = c >= cols[lastC] ? lastC - 1 : (g.colHint = segment(cols, c, g.colHint));
  const tc = (c - cols[j]) / (cols[j + 1] - cols[j]);
  const n = cols.length;
  const a = v[i * n + j] + tc * (v[i * n + j + 1] - v[i * n + j]);
  const b = v[(i + 1) * n + j] + tc * (v[(i + 1) * n + j + 1] - v[(i + 1) * n + j]);
  return scale * (a + tr * (b - a));
}
