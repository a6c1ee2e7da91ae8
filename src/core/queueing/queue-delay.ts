/**
 * Queue-delay control: under sustained overload the queue is held to a short sojourn well
 * inside each class's queue budget, so that no error in predicting a wait can carry an admitted
 * request past its first-token deadline. As in CoDel, what is bounded is the time spent
 * waiting, not the number waiting. The control comes into force for a class when its queue
 * shows a wait at the target — the head has waited that long, or an ordinary newcomer is
 * predicted to (a burst fills a queue faster than its head ages) — and stays in force until a
 * whole interval passes in which no such wait was seen and nothing of the class was refused
 * for its wait: then the queue was one a burst passed through, not one that stands. While in force, admission admits only predicted
 * waits within the target. Deterministic: time comes from the caller. Formula and the
 * measurements behind the defaults: ../admission/README.md.
 */
import type { Ms } from '../request/units.ts';
import type { SloClassName } from '../request/slo-classes.ts';

export interface QueueDelayParams {
  /** The target sojourn as a fraction of the class's queue budget. */
  readonly targetRatio: number;
  /** How long without a refusal for its wait before a class's control lapses. */
  readonly intervalMs: Ms;
}

export class QueueDelayControl {
  readonly params: QueueDelayParams;
  /** Classes under control, and when each last showed a wait at the target or refused one. */
  private readonly lastPressure = new Map<SloClassName, Ms>();

  constructor(params: QueueDelayParams) {
    this.params = params;
  }

  /**
   * The target in force for `cls` at `nowMs`, or null when the control is not: `budgetMs` is the
   * class's queue budget, `waitSeenMs` the longest wait its queue shows now (its head's, or an
   * ordinary newcomer's predicted one; −∞ when nothing waits).
   */
  targetMs(cls: SloClassName, budgetMs: Ms, waitSeenMs: Ms, nowMs: Ms): Ms | null {
    const target = this.params.targetRatio * budgetMs;
    const last = this.lastPressure.get(cls);
    if (last !== undefined && nowMs - last < this.params.intervalMs) return target;
    if (waitSeenMs >= target) {
      this.lastPressure.set(cls, nowMs);
      return target;
    }
    this.lastPressure.delete(cls);
    return null;
  }

  /**
   * Whether the control is in force for `cls` at `nowMs` — it is refusing requests whose wait
   * would pass the target — without refreshing it.
   */
  inForce(cls: SloClassName, nowMs: Ms): boolean {
    const last = this.lastPressure.get(cls);
    return last !== undefined && nowMs - last < this.params.intervalMs;
  }

  /** A request of `cls` was refused because its wait would not fit: the control holds on. */
  refused(cls: SloClassName, nowMs: Ms): void {
    if (this.lastPressure.has(cls)) this.lastPressure.set(cls, nowMs);
  }
}
