/**
 * The deadline gate: will the request make its deadline if admitted now? Predicted TTFT is the
 * wait for the queue ahead (its band and higher, at the dispatcher's measured rate) plus its own
 * prefill and first decode step; slack is the first-token deadline minus now minus that minus an
 * uncertainty margin (fixed plus a fraction of the prediction). Classes with a completion
 * objective, and requests whose client set a deadline, also need the predicted p90 completion
 * inside it. The other half of the deadline
 * promise — not pushing running streams past their token-gap objective — is kept at dispatch
 * by flow control, whose waits this prediction includes.
 */
import type { Assessment } from './admission.ts';
import { PASS, type GateInput, type GateVerdict } from './gate.ts';
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
  readonly waitMs: Ms;
  /** Completion slack for classes with an E2E objective, else null. */
  readonly e2eSlackMs: Ms | null;
}

export function assessDeadline(input: GateInput, p: DeadlineGateParams): DeadlineView {
  const { req, demand, cls, fleet, nowMs } = input;
  const { waitMs } = fleet.queueAhead(
    cls.name,
    demand.inputTokens,
    demand.kvTokens,
    demand.output.p50,
  );
  const predictedTtftMs = waitMs + demand.prefillMs + demand.firstDecodeMs;
  const margin = (t: Ms) => p.marginMs + p.marginRatio * t;
  const ttft = cls.objectives.ttftMs;
  const slackMs =
    ttft === undefined
      ? null
      : req.arrivalMs + ttft - nowMs - predictedTtftMs - margin(predictedTtftMs);
  // The completion deadline is the class's (judged at the p90 output), or the client's own
  // when sooner (judged at the p50: refusing what would likely finish is worse than a miss).
  const e2e = cls.objectives.e2eMs;
  const classDeadline = e2e === undefined ? Infinity : req.arrivalMs + e2e;
  const clientDeadline = req.deadlineMs ?? Infinity;
  const client = clientDeadline < classDeadline;
  const completeBy = client ? clientDeadline : classDeadline;
  const output = client ? demand.output.p50 : demand.output.p90;
  const predictedE2e = predictedTtftMs + output * fleet.decodeStepMs;
  const e2eSlackMs =
    completeBy === Infinity ? null : completeBy - nowMs - predictedE2e - margin(predictedE2e);
  return { demand, slackMs, predictedTtftMs, waitMs, e2eSlackMs };
}

/**
 * `queueBudgetMs`, when known, is the class's queue budget: a refused request is told to come
 * back when the queue ahead has drained to within it, not when it is empty.
 */
export function checkDeadline(
  view: DeadlineView,
  p: DeadlineGateParams,
  queueBudgetMs: Ms | null = null,
): GateVerdict {
  if ((view.slackMs ?? 0) >= 0 && (view.e2eSlackMs ?? 0) >= 0) return PASS;
  const drainMs = queueBudgetMs === null ? view.waitMs : view.waitMs - queueBudgetMs;
  return {
    pass: false,
    reason: 'deadline',
    status: 503,
    retryAfterMs: drainRetryAfterMs(drainMs, p.retryAfterMinMs, p.retryAfterMaxMs),
  };
}
