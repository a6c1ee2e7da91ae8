/**
 * Refusals that need no assessment, made before admission looks at a request, under every
 * policy: its client's deadline has already passed (504 `deadline_exceeded`, never retried), an
 * attempt with its idempotency key is being served (409 `duplicate`: one execution per key), or
 * no replica is ready (503 `no_ready_replica`, told to come back when the host expects one).
 */
import type { LlmRequest } from '../request/request.ts';
import type { Ms } from '../request/units.ts';
import type { Rejection } from '../request/decision.ts';

/** Retry-After of a refusal for want of any ready replica, when the host cannot say more. */
const NO_REPLICA_RETRY_MS: Ms = 1_000;

export interface UpFront {
  readonly nowMs: Ms;
  /** An attempt with this request's idempotency key is in flight. */
  readonly keyInFlight: boolean;
  readonly readyReplicas: number;
  /** With none ready: when one may be, as the host sees it. */
  readonly readyInMs?: Ms;
}

/** The refusal, or undefined when admission decides. */
export function refusedUpFront(asked: LlmRequest, at: UpFront): Rejection | undefined {
  if (asked.deadlineMs !== undefined && asked.deadlineMs <= at.nowMs) {
    return { outcome: 'reject', status: 504, reason: 'deadline_exceeded' };
  }
  // The same logical request is never executed twice at once: its client must wait for the
  // one in flight (the gateway attaches it there; the simulator's clients get a 409).
  if (at.keyInFlight) return { outcome: 'reject', status: 409, reason: 'duplicate' };
  if (at.readyReplicas === 0) {
    const retryAfterMs = Math.max(1, at.readyInMs ?? NO_REPLICA_RETRY_MS);
    return { outcome: 'reject', status: 503, reason: 'no_ready_replica', retryAfterMs };
  }
  return undefined;
}
