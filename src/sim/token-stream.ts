/**
 * One stream of tokens as its client reads it: a request's, or one choice's of a request for
 * several (`n`). It times its own tokens, each gap from its own last token, and keeps its own
 * largest gaps: a choice's p99 gap is its own stream's, as its client reads it. Timestamps are
 * simulated ms.
 */
import type { Ms } from '../core/request/units.ts';
import { TailSamples } from '../core/observe/tail-samples.ts';
import type { StepEnds } from '../engine/token-runs.ts';
import type { TokenClock } from './token-clock.ts';
import type { RequestTracker } from './request-tracker.ts';

export abstract class TokenStream {
  // The fields every token reads come first, so they share the object's first cache line.
  /** Its row in the run's token clock: its last token's time and its gaps' floor. */
  private readonly slot: number;
  protected readonly times: TokenClock;
  /** The next gap spans a tool call's pause: the tool's time, not the server's, so not a gap. */
  private pauseGap = false;
  /** Gaps timed on this stream. */
  gapCount = 0;
  /** Tokens streamed to the client so far. */
  streamed = 0;
  /**
   * Every gap, kept only when the request might end without completing after producing tokens
   * (clients with timeouts): the pooled ITL must then drop its gaps, as vLLM's client does. One
   * array for all the request's streams.
   */
  readonly gaps: number[] | null;
  /** Its largest gaps: enough for their exact p99 and max. */
  private tail: TailSamples;

  /** `maxTokens`: the most tokens it can stream. */
  constructor(times: TokenClock, maxTokens: number, gaps: number[] | null) {
    this.times = times;
    this.slot = times.slot();
    this.tail = new TailSamples(maxTokens - 1);
    this.gaps = gaps;
  }

  /** The request this stream is part of. */
  abstract readonly request: RequestTracker;

  /** When its last token came (undefined before its first). */
  get lastTokenMs(): Ms | undefined {
    return this.times.last(this.slot);
  }

  set lastTokenMs(atMs: Ms | undefined) {
    this.times.lastMs[this.slot] = atMs ?? NaN;
  }

  /** Its first token, at `atMs`: a start, not a gap. */
  started(atMs: Ms): void {
    this.lastTokenMs = atMs;
    this.streamed = 1;
  }

  /** Its tool call paused it: the gap to the next token is not the server's. */
  paused(): void {
    this.pauseGap = true;
  }

  /** Its gaps' p99 (exact, numpy's linear rule); undefined before its second token. */
  get gapP99Ms(): Ms | undefined {
    return this.gapCount > 0 ? this.tail.p99(this.gapCount) : undefined;
  }

  /** Its longest gap; 0 before its second token. */
  get maxGapMs(): Ms {
    return this.tail.max;
  }

  /** Starts over with no token, to stream at most `maxTokens`. */
  protected restart(maxTokens: number): void {
    this.times.lastMs[this.slot] = NaN;
    this.times.tailFloor[this.slot] = -Infinity;
    this.tail = new TailSamples(maxTokens - 1);
    this.streamed = 0;
    this.gapCount = 0;
    this.pauseGap = false;
  }

  /**
   * A token at `atMs`; returns its gap, or −1 for the one after a tool call's pause (always a
   * number: the per-token path keeps it unboxed).
   */
  recordToken(atMs: Ms): number {
    const { lastMs, tailFloor } = this.times;
    const k = this.slot;
    this.streamed++;
    if (this.pauseGap) {
      this.pauseGap = false;
      lastMs[k] = atMs;
      return -1;
    }
    const gap = atMs - lastMs[k];
    lastMs[k] = atMs;
    if (gap > tailFloor[k]) tailFloor[k] = this.tail.add(gap);
    this.gapCount++;
    if (this.gaps !== null) this.gaps.push(gap);
    return gap;
  }

  /**
   * Its tokens at steps `from + 1` … `to` of a replica, each the step after the one before
   * (token-runs.ts): as `recordToken` for each, the pooled gaps left to the caller.
   */
  recordRun(steps: StepEnds, from: number, to: number): void {
    const { lastMs, tailFloor } = this.times;
    const k = this.slot;
    let floor = tailFloor[k];
    let before = steps.endMs(from);
    for (let step = from + 1; step <= to; step++) {
      const at = steps.endMs(step);
      const gap = at - before;
      before = at;
      if (gap > floor) floor = this.tail.add(gap);
      if (this.gaps !== null) this.gaps.push(gap);
    }
    tailFloor[k] = floor;
    lastMs[k] = before;
    this.streamed += to - from;
    this.gapCount += to - from;
  }
}
