/**
 * The deadline gate: will the request make its deadline if admitted now? Predicted TTFT is the
 * wait for the queue ahead (its band and higher, at the dispatcher's measured rate, calibrated
 * by the waits requests of its size had) plus its own prefill and first decode step. Slack is
 * judged at the *sure* wait — a high percentile of those waits — less an uncertainty margin
 * (fixed plus a fraction of the prediction). Classes with a completion objective, and requests
 * whose client set a deadline, also need the predicted p90 completion inside it. While the
 * class's queue-delay control is in force, the predicted wait must also be within its target
 * sojourn. The other half of the deadline promise — not pushing running streams past their
 * token-gap objective — is kept at dispatch by flow control, whose waits this prediction
 * includes.
 */
import type { Assessment, Rejection } from '../request/decision.ts';
import type { FleetLoad } from '../estimate/fleet-load.ts';
import type { SloClass } from '../request/slo-classes.ts';
import { PASS, waitAsk, type GateInput, type GateVerdict } from './gate.ts';
import { drainRetryAfterMs } from './retry-after.ts';
import type { Ms } from '../request/units.ts';

export const DEADLINE_GATE = 'deadline';

export interface DeadlineGateParams {
  readonly marginMs: Ms;
  readonly marginRatio: number;
  readonly retryAfterMinMs: Ms;
  readonly retryAfterMaxMs: Ms;
}

export interface DeadlineView extends Assessment {
  /** Completion slack for classes with an E2E objective, else null. */
  readonly e2eSlackMs: Ms | null;
  /**
   * Up to this wait the queue-delay target yields to priority (null: it does not): the class
   * queues under overload (`overload: queue`) and work of lower priority waits, so the capacity
   * that work would take belongs to this class first. The class's queue budget (its TTFT
   * objective before a budget is learned): within it, the slack alone decides — judged at the
   * sure wait, less the margin, which is what guards against estimation error.
   */
  readonly yieldWaitMs: Ms | null;
  /** The completion deadline is the client's own: a moment a retry only comes nearer to. */
  readonly byClient: boolean;
}

export function assessDeadline(input: GateInput, p: DeadlineGateParams): DeadlineView {
  const { req, demand, cls, fleet, nowMs } = input;
  const ahead = fleet.queueAhead(cls.name, waitAsk(input));
  const { waitMs, modelledWaitMs = waitMs, sureWaitMs = waitMs, sharedPrefillMs = 0 } = ahead;
  // A long prompt's wait is its own, not a sign of the queue's.
  const queueTargetMs = fleet.queueTargetMs(cls.name, ahead.long === true ? 0 : waitMs);
  // Its first token comes after its prefill, and that of the long prompts whose step it joins.
  const prefillMs = sharedPrefillMs + demand.prefillMs;
  const predictedTtftMs = waitMs + prefillMs + demand.handoverMs + demand.firstDecodeMs;
  const margin = (t: Ms) => p.marginMs + p.marginRatio * t;
  const ttft = cls.objectives.ttftMs;
  const sureTtftMs = sureWaitMs + prefillMs + demand.handoverMs + demand.firstDecodeMs;
  const slackMs =
    ttft === undefined ? null : req.arrivalMs + ttft - nowMs - sureTtftMs - margin(sureTtftMs);
  // The completion deadline is the class's (judged at the p90 output), or the client's own
  // when sooner (judged at the p50: refusing what would likely finish is worse than a miss).
  const e2e = cls.objectives.e2eMs;
  const classDeadline = e2e === undefined ? Infinity : req.arrivalMs + e2e;
  const clientDeadline = req.deadlineMs ?? Infinity;
  const client = clientDeadline < classDeadline;
  const completeBy = client ? clientDeadline : classDeadline;
  const output = client ? demand.output.p50 : demand.output.p90;
  const predictedE2e = sureTtftMs + output * fleet.decodeStepMs;
  const e2eSlackMs =
    completeBy === Infinity ? null : completeBy - nowMs - predictedE2e - margin(predictedE2e);
  const yieldWaitMs = yieldsUpTo(fleet, cls);
  return {
    demand,
    slackMs,
    predictedTtftMs,
    waitMs,
    modelledWaitMs,
    queueTargetMs,
    e2eSlackMs,
    yieldWaitMs,
    byClient: client,
  };
}

/** Up to what wait the class's queue-delay target yields to priority (`DeadlineView.yieldWaitMs`). */
function yieldsUpTo(fleet: FleetLoad, cls: SloClass): Ms | null {
  const budget = fleet.queueBudgetMs(cls.name) ?? cls.objectives.ttftMs;
  return cls.overload === 'queue' && budget !== undefined && fleet.lowerWaiting(cls.name)
    ? budget
    : null;
}

/**
 * `queueBudgetMs`, when known, is the class's queue budget: a refused request is told to come
 * back when the queue ahead has drained to within what admission would take — the target
 * sojourn while the control is in force, else the budget — not when it is empty.
 */
export function checkDeadline(
  view: DeadlineView,
  p: DeadlineGateParams,
  queueBudgetMs: Ms | null = null,
): GateVerdict {
  const target = view.queueTargetMs;
  // The target yields to priority (`yieldWaitMs`): refusing a class that may queue while lower
  // work waits to be served would be a priority inversion. Classes that reject fast keep it.
  const yields = view.yieldWaitMs !== null && view.waitMs <= view.yieldWaitMs;
  const withinTarget = target === null || view.waitMs <= target || yields;
  if ((view.slackMs ?? 0) >= 0 && (view.e2eSlackMs ?? 0) >= 0 && withinTarget) return PASS;
  // Its client's deadline missed with nothing ahead of it: it is its own work that does not
  // fit, and a retry only comes nearer to the deadline. No Retry-After.
  if (view.byClient && (view.e2eSlackMs ?? 0) < 0 && view.waitMs <= 0) {
    return { pass: false, reason: 'deadline', status: 503, final: true };
  }
  const limitMs = target ?? queueBudgetMs;
  const drainMs = limitMs === null ? view.waitMs : view.waitMs - limitMs;
  return {
    pass: false,
    reason: 'deadline',
    status: 503,
    retryAfterMs: drainRetryAfterMs(drainMs, p.retryAfterMinMs, p.retryAfterMaxMs),
  };
}

/**
 * The gate's refusal of every request `leastWaitMs` is a floor for (`FleetLoad.leastWaitMs`):
 * the queue-delay target is in force and that floor already lies past it (and the class would
 * not yield to priority at that wait), so `checkDeadline` would refuse any such request whatever
 * its body asks. Undefined otherwise: the request is left to `checkDeadline`. The Retry-After is
 * the floor's: the queue is what must drain.
 */
export function checkLeastWait(
  fleet: FleetLoad,
  cls: SloClass,
  leastWaitMs: Ms,
  p: DeadlineGateParams,
): Rejection | undefined {
  if (leastWaitMs <= 0) return undefined;
  const targetMs = fleet.queueTargetMs(cls.name, leastWaitMs);
  if (targetMs === null || leastWaitMs <= targetMs) return undefined;
  const yieldWaitMs = yieldsUpTo(fleet, cls);
  if (yieldWaitMs !== null && leastWaitMs <= yieldWaitMs) return undefined;
  const retryAfterMs = drainRetryAfterMs(
    leastWaitMs - targetMs,
    p.retryAfterMinMs,
    p.retryAfterMaxMs,
  );
  return {
    outcome: 'reject',
    reason: 'deadline',
    status: 503,
    retryAfterMs,
    queue: { leastWaitMs, targetMs },
  };
}
