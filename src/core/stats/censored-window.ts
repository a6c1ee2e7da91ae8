/**
 * The last `capacity` values of a stream where some are only lower bounds — an output cut at
 * its max_tokens says its true length was at least that — and their distribution as the
 * Kaplan–Meier estimator gives it: a bound counts among the values at risk up to where it was
 * cut, and no further. Dropping the bounds would leave only the outputs that ended early, and
 * every quantile low; taking them as lengths would teach a request with a high cap the low
 * caps of others. While the window holds no bound it is exactly a `SortedWindow` (numpy-linear
 * quantiles, the empirical CDF), so the estimate changes only where something was cut.
 */
import { SortedWindow, lowerBound, upperBound } from './sorted-window.ts';

export class CensoredWindow {
  readonly capacity: number;
  /** Every value, a bound at its cut. */
  private readonly all: SortedWindow;
  /** In `all`'s arrival order (`SortedWindow.nextSlot`): whether each value is a bound. */
  private readonly isBound: Uint8Array;
  /** The bounds now in the window, ascending. */
  private readonly bounds: number[] = [];
  /** Kaplan–Meier's steps, computed once per change: each distinct true value, the CDF there. */
  private steps: { readonly values: number[]; readonly cdf: number[] } | null = null;

  constructor(capacity: number) {
    this.all = new SortedWindow(capacity);
    this.capacity = capacity;
    this.isBound = new Uint8Array(capacity);
  }

  get size(): number {
    return this.all.size;
  }

  /** `bound`: `v` is only a lower bound of the true value. */
  add(v: number, bound = false): void {
    const slot = this.all.nextSlot;
    const left = this.all.add(v);
    if (left !== undefined && this.isBound[slot] === 1) {
      this.bounds.splice(lowerBound(this.bounds, this.bounds.length, left), 1);
    }
    this.isBound[slot] = bound ? 1 : 0;
    if (bound) this.bounds.splice(upperBound(this.bounds, this.bounds.length, v), 0, v);
    this.steps = null;
  }

  /** The values now in the window, oldest first, and which of them are bounds. */
  oldestFirst(): { readonly values: number[]; readonly bounds: boolean[] } {
    const values: number[] = [];
    const bounds: boolean[] = [];
    this.all.forEachOldestFirst((v, slot) => {
      values.push(v);
      bounds.push(this.isBound[slot] === 1);
    });
    return { values, bounds };
  }

  /** The estimated fraction of true values at most `x`. */
  cdf(x: number): number {
    if (this.bounds.length === 0) return this.all.cdf(x);
    const { values, cdf } = this.kaplanMeier();
    let f = 0;
    for (let i = 0; i < values.length && values[i] <= x; i++) f = cdf[i];
    return f;
  }

  /**
   * Percentile q in [0, 100]. With bounds in the window: the least true value where the
   * estimated CDF reaches q; where it never does (the rest lies beyond every cut), the largest
   * value in the window, a lower bound of it.
   */
  quantile(q: number): number {
    if (this.bounds.length === 0) return this.all.quantile(q);
    const { values, cdf } = this.kaplanMeier();
    for (let i = 0; i < values.length; i++) if (cdf[i] >= q / 100 - 1e-12) return values[i];
    const sorted = this.all.ascending();
    return sorted[sorted.length - 1];
  }

  private kaplanMeier(): { readonly values: number[]; readonly cdf: number[] } {
    if (this.steps !== null) return this.steps;
    const sorted = this.all.ascending();
    const bounds = this.bounds;
    const values: number[] = [];
    const cdf: number[] = [];
    let atRisk = sorted.length;
    let survival = 1;
    let j = 0;
    for (let i = 0; i < sorted.length;) {
      const v = sorted[i];
      let here = 0;
      while (i < sorted.length && sorted[i] === v) {
        i++;
        here++;
      }
      let cut = 0;
      while (j < bounds.length && bounds[j] === v) {
        j++;
        cut++;
      }
      // True values at v end there; bounds at v are still at risk there, and leave after.
      const ended = here - cut;
      if (ended > 0) {
        survival *= 1 - ended / atRisk;
        values.push(v);
        cdf.push(1 - survival);
      }
      atRisk -= here;
    }
    this.steps = { values, cdf };
    return this.steps;
  }
}
