/**
 * Each class's queue budget: how long a request of the class may wait at the control plane and
 * still make its first-token deadline in the worst usual case — TTFT objective − p99 route time
 * − p99 of (prefill + first decode, measured from dispatch to first token) − margin. Learned
 * online from recent first tokens; reported, used by the deadline gate's Retry-After (come back
 * when the queue has drained to within the budget), and a signal for scaling.
 */
import type { SloClass, SloClassName } from '../request/slo-classes.ts';
import type { Ms } from '../request/units.ts';
import { SortedWindow } from '../stats/sorted-window.ts';

export interface QueueBudget {
  readonly budgetMs: Ms | null;
  readonly serviceP99Ms: Ms | null;
  readonly samples: number;
}

export class QueueBudgets {
  private readonly service = new Map<SloClassName, SortedWindow>();
  private readonly classes: Readonly<Record<SloClassName, SloClass>>;
  private readonly marginMs: Ms;
  private readonly routeP99Ms: Ms;

  constructor(classes: Readonly<Record<SloClassName, SloClass>>, marginMs: Ms, routeP99Ms = 0) {
    this.classes = classes;
    this.marginMs = marginMs;
    this.routeP99Ms = routeP99Ms;
  }

  /** A request of `cls` got its first token `serviceMs` after it was dispatched. */
  observe(cls: SloClassName, serviceMs: Ms): void {
    let w = this.service.get(cls);
    if (w === undefined) this.service.set(cls, (w = new SortedWindow(512)));
    w.add(Math.max(0, serviceMs));
  }

  /**
   * The learned budget, or before any first token was seen the TTFT objective less the margin
   * (what a request may wait at most); null for a class without a TTFT objective.
   */
  orObjective(cls: SloClassName): Ms | null {
    const ttft = this.classes[cls].objectives.ttftMs;
    if (ttft === undefined) return null;
    return this.of(cls).budgetMs ?? Math.max(0, ttft - this.routeP99Ms - this.marginMs);
  }

  /** Null for a class without a TTFT objective, or before any first token was seen. */
  of(cls: SloClassName): QueueBudget {
    const w = this.service.get(cls);
    const ttft = this.classes[cls].objectives.ttftMs;
    const serviceP99Ms = w === undefined || w.size === 0 ? null : w.quantile(99);
    const budgetMs =
      ttft === undefined || serviceP99Ms === null
        ? null
        : Math.max(0, ttft - this.routeP99Ms - serviceP99Ms - this.marginMs);
    return { budgetMs, serviceP99Ms, samples: w?.size ?? 0 };
  }
}
