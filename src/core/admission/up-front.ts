/**
 * Refusals that need no assessment, made before admission looks at a request, under every
 * policy: its client's deadline is out of reach (504 `deadline_exceeded`, never retried), an
 * attempt with its idempotency key is being served (409 `duplicate`: one execution per key), or
 * no replica is ready (503 `no_ready_replica`, told to come back when the host expects one).
 *
 * A deadline is out of reach once it has passed, or once it is nearer than the admission
 * policy's margin (`Admission.deadlineMarginMs`): that policy's deadline gate refuses any
 * request whose completion deadline is inside its margin of the prediction, so none could be
 * admitted whatever it asks. The verdict needs only the request's deadline, so a host may give it
 * before the request's body is read (`deadlineOutOfReach`). The same rule makes a refusal final
 * when its Retry-After would bring the request back with its deadline out of reach
 * (`finalRefusal`): every refusal says whether a retry can succeed.
 */
import type { LlmRequest } from '../request/request.ts';
import type { Ms } from '../request/units.ts';
import type { Rejection } from '../request/decision.ts';

/** Retry-After of a refusal for want of any ready replica, when the host cannot say more. */
const NO_REPLICA_RETRY_MS: Ms = 1_000;

export interface UpFront {
  readonly nowMs: Ms;
  /** The admission policy's deadline margin (0: only a passed deadline is out of reach). */
  readonly deadlineMarginMs: Ms;
  /** An attempt with this request's idempotency key is in flight. */
  readonly keyInFlight: boolean;
  readonly readyReplicas: number;
  /** With none ready: when one may be, as the host sees it. */
  readonly readyInMs?: Ms;
}

/** The refusal, or undefined when admission decides. */
export function refusedUpFront(asked: LlmRequest, at: UpFront): Rejection | undefined {
  const outOfReach = deadlineOutOfReach(asked.deadlineMs, at.nowMs, at.deadlineMarginMs);
  if (outOfReach !== undefined) return outOfReach;
  // The same logical request is never executed twice at once: its client must wait for the
  // one in flight (the gateway attaches it there; the simulator's clients get a 409).
  if (at.keyInFlight) return { outcome: 'reject', status: 409, reason: 'duplicate' };
  if (at.readyReplicas === 0) {
    const retryAfterMs = Math.max(1, at.readyInMs ?? NO_REPLICA_RETRY_MS);
    return { outcome: 'reject', status: 503, reason: 'no_ready_replica', retryAfterMs };
  }
  return undefined;
}

/** A client deadline that has passed, or is too near for any answer: never retryable. */
export const OUT_OF_REACH: Rejection = {
  outcome: 'reject',
  status: 504,
  reason: 'deadline_exceeded',
  final: true,
};

/** The refusal of a client deadline that has passed or lies within `marginMs` of now. */
export function deadlineOutOfReach(
  deadlineMs: Ms | undefined,
  nowMs: Ms,
  marginMs: Ms,
): Rejection | undefined {
  return deadlineMs !== undefined && deadlineMs <= nowMs + marginMs ? OUT_OF_REACH : undefined;
}

/**
 * A refusal as its client is told it: one whose Retry-After would send the request back when
 * its deadline is already out of reach (so `refusedUpFront` would refuse the retry) is final —
 * no Retry-After, no retry — rather than an invitation to a retry that cannot succeed. Any other
 * refusal is returned as it is.
 */
export function finalRefusal(
  refused: Rejection,
  deadlineMs: Ms | undefined,
  nowMs: Ms,
  marginMs: Ms,
): Rejection {
  const after = refused.retryAfterMs;
  if (refused.final === true || after === undefined) return refused;
  if (deadlineOutOfReach(deadlineMs, nowMs + after, marginMs) === undefined) return refused;
  const { retryAfterMs: _told, ...told } = refused;
  return { ...told, final: true };
}
