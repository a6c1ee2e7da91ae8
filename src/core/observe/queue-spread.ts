/**
 * How evenly queue work sits across the replicas, sampled over a run: each sample is the
 * largest replica's queue work over the fleet median's (both in ms: how long the replica needs
 * for what it holds, prefill still to compute and decode still to run; a median below one full
 * step counts as one step — less is no queue), and the report gives its
 * p99 and the longest stretch any replica stayed above twice the median: a prefix-affine router
 * sending every miss of a hot prefix to one replica (a "death spiral") shows there.
 */
import { percentileSorted } from '../stats/percentile.ts';
import type { Ms } from '../request/units.ts';

/** Spread above this, one replica holds more than twice the median's queue. */
const HOT = 2;

export interface QueueSpreadReport {
  readonly samples: number;
  readonly queue_work_spread_p99: number;
  readonly queue_work_spread_max: number;
  /** The longest stretch (s) during which some replica's queue work stayed above 2× the median. */
  readonly over_2x_longest_s: number;
}

export class QueueSpread {
  private readonly ratios: number[] = [];
  private overSinceMs: Ms | null = null;
  private longestMs: Ms = 0;
  private scratch = new Float64Array(0);

  /** One sample at `nowMs` of each replica's queue work (ms); `stepMs`: one full step. */
  sample(nowMs: Ms, works: ArrayLike<number>, stepMs: Ms): void {
    const n = works.length;
    if (n === 0) return;
    if (this.scratch.length < n) this.scratch = new Float64Array(n);
    const sorted = this.scratch.subarray(0, n);
    for (let i = 0; i < n; i++) sorted[i] = works[i];
    sorted.sort();
    const ratio = sorted[n - 1] / Math.max(percentileSorted(sorted, 50), stepMs);
    this.ratios.push(ratio);
    if (ratio > HOT) {
      this.overSinceMs ??= nowMs;
      this.longestMs = Math.max(this.longestMs, nowMs - this.overSinceMs);
    } else this.overSinceMs = null;
  }

  report(): QueueSpreadReport {
    const sorted = Float64Array.from(this.ratios).sort();
    const r3 = (x: number) => (Number.isFinite(x) ? Math.round(x * 1000) / 1000 : 0);
    return {
      samples: sorted.length,
      queue_work_spread_p99: r3(percentileSorted(sorted, 99)),
      queue_work_spread_max: r3(sorted[sorted.length - 1] ?? 0),
      over_2x_longest_s: r3(this.longestMs / 1000),
    };
  }
}
