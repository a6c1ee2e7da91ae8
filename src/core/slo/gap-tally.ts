/**
 * One request's token gaps as the `token_gap` objectives judge them: how many there were, and how
 * many exceeded each threshold asked for up front (those of the SLOs covering the request). The
 * per-token cost is a comparison per distinct threshold — usually one — and nothing is kept of
 * the gaps themselves.
 */
import type { Ms } from '../request/units.ts';

/** A request's gaps, counted: all of them, and those above a threshold. */
export interface GapCounts {
  readonly count: number;
  /** Gaps longer than `thresholdMs`; only for a threshold the counts were kept for. */
  above(thresholdMs: Ms): number;
}

export class GapTally implements GapCounts {
  count = 0;
  private readonly thresholds: readonly Ms[];
  private readonly over: number[];

  constructor(thresholds: Iterable<Ms>) {
    this.thresholds = [...new Set(thresholds)];
    this.over = this.thresholds.map(() => 0);
  }

  add(gapMs: Ms): void {
    this.count++;
    const t = this.thresholds;
    for (let i = 0; i < t.length; i++) if (gapMs > t[i]) this.over[i]++;
  }

  above(thresholdMs: Ms): number {
    const i = this.thresholds.indexOf(thresholdMs);
    if (i < 0) throw new RangeError(`gaps were not counted against ${thresholdMs} ms`);
    return this.over[i];
  }
}
