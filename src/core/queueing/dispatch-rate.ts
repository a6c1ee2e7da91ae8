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

/**
 * The least backlogged time a rate is measured over. Dispatch comes in steps: a replica takes a
 * few prompts in one step, then none until the next, 20–60 ms later. Eight dispatches of one
 * step, a millisecond apart, read as a thousand a second; a quarter second spans several steps
 * of any model.
 */
const MIN_SPAN_MS: Ms = 250;

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

  /**
   * Dispatches per ms at `nowMs`, or undefined while fewer than 8 backlogged dispatches, or
   * less than MIN_SPAN_MS of backlogged time, fall in the last span: a rate measured before an
   * idle stretch says nothing of the next flood (the fleet may have emptied since, or been cut
   * off mid-wave), and the caller's stand-in is the better guess.
   */
  perMs(nowMs: Ms): number | undefined {
    this.forgetBefore(nowMs - this.spanMs);
    if (this.spanCount < 8 || this.sum <= 0 || this.spanSum < MIN_SPAN_MS) return undefined;
    // A wave's dozens of same-millisecond dispatches, spread over the backlog they ended.
    this.lastPerMs = Math.min(this.count / this.sum, this.spanCount / this.spanSum);
    return this.lastPerMs;
  }

  /** The last rate measured, however long ago: a ceiling for a guess, never a measurement. */
  lastPerMs: number | undefined;

  private addToSpan(nowMs: Ms, gap: Ms): void {
    if (this.spanCount === SPAN_SLOTS) this.dropOldest();
    const at = (this.first + this.spanCount) % SPAN_SLOTS;
    this.spanEnds[at] = nowMs;
    this.spanGaps[at] = gap;
    this.spanCount++;
    this.spanSum += gap;
    this.forgetBefore(nowMs - this.spanMs);
  }

  private forgetBefore(ms: Ms): void {
    while (this.spanCount > 0 && this.spanEnds[this.first] < ms) this.dropOldest();
  }

  private dropOldest(): void {
    this.spanSum -= this.spanGaps[this.first];
    this.first = (this.first + 1) % SPAN_SLOTS;
    this.spanCount--;
    if (this.spanCount === 0) this.spanSum = 0;
  }
}
