/**
 * The server-side retry budget of a tenant (after Finagle's RetryBudget): every admitted first
 * attempt deposits `ratio` of a retry, every admitted retry withdraws one, and a small floor
 * refills over time so a quiet tenant can still retry. When the budget is empty, retries are
 * refused with 429 `retry_budget`: retries may add at most `ratio` to a tenant's load, however
 * its clients behave. State is plain data; `check` never mutates it.
 */
import type { Ms } from '../request/units.ts';
import type { GateVerdict } from './gate.ts';
import { PASS } from './gate.ts';

export interface RetryBudgetState {
  level: number;
  updatedMs: Ms;
}

/** Most retries a tenant may bank. */
export const RETRY_BUDGET_CAPACITY = 20;
/** Retries per second every tenant earns regardless of traffic. */
export const RETRY_FLOOR_PER_S = 1;
const MAX_RETRY_AFTER_MS = 60_000;

export function newRetryBudget(nowMs: Ms): RetryBudgetState {
  return { level: RETRY_BUDGET_CAPACITY / 2, updatedMs: nowMs };
}

function levelAt(s: RetryBudgetState, nowMs: Ms): number {
  const earned = (Math.max(0, nowMs - s.updatedMs) / 1_000) * RETRY_FLOOR_PER_S;
  return Math.min(RETRY_BUDGET_CAPACITY, s.level + earned);
}

export function checkRetryBudget(s: RetryBudgetState, attempt: number, nowMs: Ms): GateVerdict {
  if (attempt <= 1) return PASS;
  const level = levelAt(s, nowMs);
  if (level >= 1) return PASS;
  const waitMs = Math.ceil(((1 - level) / RETRY_FLOOR_PER_S) * 1_000);
  return {
    pass: false,
    reason: 'retry_budget',
    status: 429,
    retryAfterMs: Math.min(MAX_RETRY_AFTER_MS, Math.max(1, waitMs)),
  };
}

/** An attempt was admitted: a first attempt deposits `ratio`, a retry withdraws one. */
export function chargeRetryBudget(
  s: RetryBudgetState,
  attempt: number,
  ratio: number,
  nowMs: Ms,
): void {
  s.level = Math.min(RETRY_BUDGET_CAPACITY, levelAt(s, nowMs) + (attempt <= 1 ? ratio : -1));
  s.updatedMs = nowMs;
}
