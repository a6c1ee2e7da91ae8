/**
 * How fast the dispatcher releases queued work, measured only across stretches where requests
 * were left waiting (an idle gap says nothing about capacity). Admission divides the queue ahead
 * of a request by this rate to predict its wait. Two windows, and the slower of them: the last
 * 64 intervals follow a drop at once, and the last 4 s of backlogged dispatches keep a wave —
 * a batch of streams that started together ending together, dozens dispatched in the same
 * millisecond — from reading as a rate the fleet cannot keep up. Deterministic: no clock of its
 * own; time comes with each dispatch.
 */
import type { Ms } from '../request/units.ts';

/** Intervals the span window can hold; beyond it the window is cut short, never wrong. */
const SPAN_SLOTS = 4096;

export class DispatchRate {
  private readonly intervals: Float64Array;
  private next = 0;
  private count = 0;
  private sum = 0;
  /** The span window: each backlogged interval and when it ended, oldest at `first`. */
  private readonly spanEnds = new Float64Array(SPAN_SLOTS);
  private readonly spanGaps = new Float64Array(SPAN_SLOTS);
  private first = 0;
  private spanCount = 0;
  private spanSum = 0;
  private readonly spanMs: Ms;
  private lastMs = 0;
  private backlogged = false;

  constructor(window = 64, spanMs: Ms = 4_000) {
    this.intervals = new Float64Array(window);
    this.spanMs = spanMs;
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
      this.addToSpan(nowMs, gap);
    }
    this.lastMs = nowMs;
    this.backlogged = leftWaiting;
  }

  /** Dispatches per ms, or undefined until enough backlogged dispatches were seen. */
  perMs(): number | undefined {
    if (this.count < 8 || this.sum <= 0) return undefined;
    const recent = this.count / this.sum;
    // A wave's dozens of same-millisecond dispatches, spread over the backlog they ended.
    return this.spanSum > 0 ? Math.min(recent, this.spanCount / this.spanSum) : recent;
  }

  private addToSpan(nowMs: Ms, gap: Ms): void {
    if (this.spanCount === SPAN_SLOTS) this.dropOldest();
    const at = (this.first + this.spanCount) % SPAN_SLOTS;
    this.spanEnds[at] = nowMs;
    this.spanGaps[at] = gap;
    this.spanCount++;
    this.spanSum += gap;
    while (this.spanCount > 0 && this.spanEnds[this.first] < nowMs - this.spanMs) {
      this.dropOldest();
    }
  }

  private dropOldest(): void {
    this.spanSum -= this.spanGaps[this.first];
    this.first = (this.first + 1) % SPAN_SLOTS;
    this.spanCount--;
  }
}
