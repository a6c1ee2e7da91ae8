/**
 * A latency distribution in bounded memory: counts in bins spaced evenly on a log scale, twenty
 * to a decade from 0.1 ms to 10^7 ms (each bin's top 12% above its bottom), plus one for
 * anything below. What it is for is drawing a CDF, where a 12% step in x is a pixel or two;
 * percentiles that a report states come from exact samples elsewhere.
 */
const PER_DECADE = 20;
/** Each bin's upper edge over its lower. */
export const BIN_RATIO = 10 ** (1 / PER_DECADE);
const LOW_MS = 0.1;
const DECADES = 8;
const BINS = PER_DECADE * DECADES;

export interface CdfPoint {
  /** Upper edge of the bin, ms. */
  readonly ms: number;
  /** Fraction of values at or below it. */
  readonly p: number;
}

export class LogHistogram {
  private readonly counts = new Array<number>(BINS + 1).fill(0);
  private n = 0;

  add(ms: number): void {
    const i =
      ms <= LOW_MS ? 0 : Math.min(BINS, 1 + Math.floor(Math.log10(ms / LOW_MS) * PER_DECADE));
    this.counts[i]++;
    this.n++;
  }

  get count(): number {
    return this.n;
  }

  /** The CDF at each bin edge from the first value's bin to the last's. */
  cdf(): CdfPoint[] {
    const out: CdfPoint[] = [];
    if (this.n === 0) return out;
    let seen = 0;
    for (let i = 0; i <= BINS; i++) {
      if (seen === 0 && this.counts[i] === 0) continue;
      seen += this.counts[i];
      out.push({ ms: LOW_MS * 10 ** (i / PER_DECADE), p: seen / this.n });
      if (seen === this.n) break;
    }
    return out;
  }
}
