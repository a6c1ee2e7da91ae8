/**
 * When a waiting ticket has waited too long, and why. An admitted request waits only while it
 * can still make its first-token deadline (its class's, less its own prefill); a deferred one
 * until its deferral horizon; and nothing waits past its client's own deadline. The reason an
 * expiry is recorded with names the deadline that ran out.
 */
import type { RejectReason, Rejection } from '../request/decision.ts';
import type { Ms } from '../request/units.ts';
import type { Ticket } from './ticket.ts';

/** An admitted request waits only while it can still make its first-token deadline. */
export function admittedExpiry<H>(t: Ticket<H>): Ms {
  const ttft = t.cls.objectives.ttftMs;
  if (ttft === undefined) {
    const e2e = t.cls.objectives.e2eMs;
    return e2e === undefined ? Infinity : t.asked.arrivalMs + e2e;
  }
  return t.asked.arrivalMs + ttft - t.demand.prefillMs - t.demand.handoverMs;
}

/**
 * Why a waiting ticket expired: the client's own deadline when that has passed, else its class's
 * first-token deadline (admitted), else what the deferred ticket was waiting for.
 */
export function expiryReason<H>(t: Ticket<H>, nowMs: Ms): RejectReason {
  const clientDeadline = t.asked.deadlineMs;
  if (clientDeadline !== undefined && nowMs >= clientDeadline) return 'deadline_exceeded';
  return t.decision.outcome === 'defer' ? t.decision.reason : 'deadline';
}

/**
 * What a request that waited past a deadline is told: its client's, 504 and no retry; its
 * class's, 503 and come back in a second (`Pipeline.told` makes it final when its client's
 * deadline will not wait that long).
 */
export function expiredRefusal(reason: RejectReason): Rejection {
  if (reason === 'deadline_exceeded')
    return { outcome: 'reject', status: 504, reason, final: true };
  return { outcome: 'reject', status: 503, reason, retryAfterMs: 1_000 };
}
