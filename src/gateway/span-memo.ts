/**
 * Answers kept for one short span of time, by key: the first asking of a key in a span computes
 * its answer, every later asking within `spanMs` of the span's start gets that answer, and the
 * next span starts empty. For a question a flood asks many times a millisecond whose answer
 * moves on a slower time scale. Time comes from the caller (`nowMs`), so tests need no clock.
 */
import type { Ms } from '../core/request/units.ts';

export class SpanMemo<V> {
  private readonly answers = new Map<string, V>();
  private startMs: Ms = -Infinity;
  private readonly spanMs: Ms;

  constructor(spanMs: Ms) {
    this.spanMs = spanMs;
  }

  get(key: string, nowMs: Ms, ask: () => V): V {
    if (nowMs - this.startMs >= this.spanMs) {
      this.answers.clear();
      this.startMs = nowMs;
    }
    if (this.answers.has(key)) return this.answers.get(key) as V;
    const answer = ask();
    this.answers.set(key, answer);
    return answer;
  }
}
