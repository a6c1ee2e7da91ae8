/**
 * The door's one round trip to Redis, as the ADMIT script (lua-scripts.ts) takes it: the keys and
 * arguments of a tenant's ask, in the order the script reads them, and its reply read back as a
 * verdict's parts: the order the script reads them in is written once, here.
 */
import { RETRY_BUDGET_CAPACITY, RETRY_FLOOR_PER_S } from '../../core/admission/retry-budget.ts';
import {
  BUSY_RETRY_MS,
  quotaStanding,
  type Standings,
} from '../../core/admission/budget/tenant-ledger.ts';
import type { Ms } from '../../core/request/units.ts';
import { tenantKeys } from './redis-keys.ts';
import type { SharedReason, TenantAsk } from './shared-store.ts';

/** The longest a retry refused by the retry budget is told to wait, and its key's TTL. */
const RETRY_AFTER_CAP_MS = 60_000;
const RETRY_KEY_TTL_MS = 60_000;

/** ADMIT's keys and arguments for `ask`, a lease being held for `leaseTtlMs`. */
export function admitCall(ask: TenantAsk, leaseTtlMs: Ms) {
  const q = ask.quotas;
  const keys = tenantKeys(ask.tenant);
  return {
    keys: [keys.tokens, keys.leases, keys.retry, keys.requests],
    args: [
      ask.requestId,
      ask.tokens,
      q.tokensPerWindow ?? -1,
      q.windowMs,
      q.maxConcurrentRequests ?? -1,
      leaseTtlMs,
      ask.attempt,
      ask.retryBudgetRatio,
      RETRY_BUDGET_CAPACITY,
      RETRY_FLOOR_PER_S,
      BUSY_RETRY_MS,
      RETRY_AFTER_CAP_MS,
      RETRY_KEY_TTL_MS,
      q.requestsPerWindow ?? -1,
    ],
  };
}

/** ADMIT's reply: granted (and whether a lease was taken) or refused, with the standings told. */
export type AdmitReply = Standings &
  (
    | { readonly ok: true; readonly leased: boolean }
    | { readonly ok: false; readonly reason: SharedReason; readonly retryAfterMs: Ms }
  );

export function admitReply(reply: unknown, ask: TenantAsk): AdmitReply {
  const [verdict, n, tokensLeft, requestsLeft] = reply as [string, number, string?, string?];
  const q = ask.quotas;
  const standing = {
    ...standingOf(tokensLeft, q.tokensPerWindow, q.windowMs, 'tokens'),
    ...standingOf(requestsLeft, q.requestsPerWindow, q.windowMs, 'requests'),
  };
  if (verdict === 'ok') return { ok: true, leased: Number(n) === 1, ...standing };
  return { ok: false, reason: verdict as SharedReason, retryAfterMs: Number(n), ...standing };
}

/** A bucket's level as the script returned it ('' or none: not told), as its standing. */
function standingOf(
  level: string | undefined,
  limit: number | undefined,
  windowMs: Ms,
  unit: keyof Standings,
): Standings {
  if (limit === undefined || level === undefined || level === '') return {};
  return { [unit]: quotaStanding(Number(level), limit, windowMs) };
}
