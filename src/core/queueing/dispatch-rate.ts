/**
 * How fast the dispatcher releases queued work: the mean interval between dispatches measured
 * only across stretches where requests were left waiting (an idle gap says nothing about
 * capacity). Admission divides the queue ahead of a request by this rate to predict its wait.
 * Deterministic: a window of recent intervals, no clock of its own.
 */
import type { Ms } from '../request/units.ts';

export class DispatchRate {
  private readonly intervals: Float64Array;
  private next = 0;
  private count = 0;
  private sum = 0;
  private lastMs = 0;
  private backlogged = false;

  constructor(window = 64) {
    this.intervals = new Float64Array(window);
  }

  /** A dispatch at `nowMs`; `leftWaiting` when requests still queue behind it. */
  record(nowMs: Ms, leftWaiting: boolean): void {
    if (this.backlogged) {
      const gap = nowMs - this.lastMs;
      if (this.count === this.intervals.length) this.sum -= this.intervals[this.next];
      else this.count++;
      this.intervals[this.next] = gap;
      this.sum += gap;
      this.next = (this.next + 1) % this.intervals.length;
    }
    this.lastMs = nowMs;
    this.backlogged = leftWaiting;
  }

  /** Dispatches per ms, or undefined until enough backlogged dispatches were seen. */
  perMs(): number | undefined {
    if (this.count < 8 || this.sum <= 0) return undefined;
    return this.count / this.sum;
  }
}
