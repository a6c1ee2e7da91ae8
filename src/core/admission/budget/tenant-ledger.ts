/**
 * The tenant-accounting port, in memory: a tenant's token and request quotas, its concurrency
 * slots and its retry budget, taken once per request at the door — before the pipeline — by the
 * gateway and the simulator alike, so what the simulator predicts is what the gateway enforces.
 * The Redis store (src/gateway/shared) implements the same rules atomically in Lua, so several
 * gateways enforce each limit once, globally; the gateway's in-memory store wraps this ledger.
 *
 * Rules: `admit` is all or nothing — a refusal takes nothing; a grant takes the charge from the
 * tenant's token bucket, one request from its request bucket, one slot when the tenant has a
 * concurrency limit, and one retry when the attempt is a retry (a first attempt deposits
 * `retryBudgetRatio` of one). Every refusal is a 429 with a Retry-After in [1 ms, the window]
 * (60 s for the retry budget); a request both buckets refuse is told the longer wait, and named
 * by it, so its retry is not refused by the other. `release(used)` frees the slot and settles
 * the token bucket by (used − charged) once: a request refused later, or expired before it ran,
 * used nothing and gets its whole charge back, its request included. Plain data throughout:
 * leases are values, the state is maps of numbers.
 */
import type { AdmissionDecision } from '../../request/decision.ts';
import type { TenantQuotas } from '../../request/tenant.ts';
import type { Ms, Tokens } from '../../request/units.ts';
import {
  chargeRetryBudget,
  checkRetryBudget,
  newRetryBudget,
  type RetryBudgetState,
} from '../retry-budget.ts';
import { quotaCharge, quotaCorrect, quotaLevel, quotaWaitMs } from './quota-bucket.ts';
import { boundedRetryMs, type TokenBucket } from './token-bucket.ts';

/** Retry-After for a concurrency slot: it frees up when another request ends, which nothing here can predict. */
export const BUSY_RETRY_MS: Ms = 1_000;

export interface TenantAsk {
  readonly tenant: string;
  /** Names the lease; unique per request attempt. */
  readonly requestId: string;
  /** Tokens charged to the bucket (`tenantCharge`), settled to what was used at release. */
  readonly tokens: Tokens;
  /** 1 for a first attempt; a retry (> 1) draws from the retry budget. */
  readonly attempt: number;
  readonly quotas: TenantQuotas;
  /** Retries a first attempt earns (`retry_budget_ratio`). */
  readonly retryBudgetRatio: number;
}

export type TenantReason =
  'tenant_tokens' | 'tenant_requests' | 'tenant_concurrency' | 'retry_budget';

/** What a grant took, to be given back once by `release`. */
export interface LedgerLease {
  readonly tenant: string;
  readonly requestId: string;
}

/**
 * Where one of a tenant's windowed quotas stands after a verdict — what OpenAI's rate-limit
 * headers tell a client (`x-ratelimit-*-tokens`, `-requests`): its limit a window, what is left
 * (after a grant's charge), and how long until the bucket is full again.
 */
export interface QuotaStanding {
  readonly limit: number;
  readonly remaining: number;
  readonly resetMs: Ms;
}

/** The standing of each quota the tenant has: its tokens and its requests a window. */
export interface Standings {
  readonly tokens?: QuotaStanding;
  readonly requests?: QuotaStanding;
}

/** The standing of a bucket at `level` (below zero: in debt) of `limit` a window. */
export function quotaStanding(level: number, limit: number, windowMs: Ms): QuotaStanding {
  const resetMs = Math.max(0, Math.ceil(((limit - level) * windowMs) / limit));
  return { limit, remaining: Math.max(0, Math.floor(level)), resetMs };
}

/** A verdict, with the standing of the quotas the tenant has. */
export type LedgerVerdict = Standings &
  (
    | { readonly ok: true; readonly lease: LedgerLease }
    | { readonly ok: false; readonly reason: TenantReason; readonly retryAfterMs: Ms }
  );

interface Held {
  /** Charged to the bucket, or null when the tenant has no token limit. */
  readonly tokens: Tokens | null;
  /** One was taken from the request bucket. */
  readonly request: boolean;
  readonly slot: boolean;
  readonly quotas: TenantQuotas;
}

interface TenantAccount {
  tokens: TokenBucket | null;
  requests: TokenBucket | null;
  slots: number;
  readonly retry: RetryBudgetState;
  /** Requests holding a slot or a charge, by request id: bounded by requests in flight. */
  readonly held: Map<string, Held>;
}

export class TenantLedger {
  readonly #replicas: number;
  readonly #tenants = new Map<string, TenantAccount>();

  /** `replicas`: gateways sharing the quotas while each counts alone (1: the whole limit). */
  constructor(o: { readonly replicas?: number } = {}) {
    this.#replicas = o.replicas ?? 1;
  }

  admit(ask: TenantAsk, nowMs: Ms): LedgerVerdict {
    const q = localShare(ask.quotas, this.#replicas);
    let s = this.#tenants.get(ask.tenant);
    if (s === undefined) {
      s = { tokens: null, requests: null, slots: 0, retry: newRetryBudget(nowMs), held: new Map() };
      this.#tenants.set(ask.tenant, s);
    }
    const retry = checkRetryBudget(s.retry, ask.attempt, nowMs);
    if (!retry.pass) {
      return { ok: false, reason: 'retry_budget', retryAfterMs: retry.retryAfterMs ?? 1 };
    }
    const max = q.maxConcurrentRequests;
    const limit = q.tokensPerWindow;
    const rpw = q.requestsPerWindow;
    const tokenWait = quotaWaitMs(s.tokens, ask.tokens, limit, q.windowMs, nowMs);
    const requestWait = quotaWaitMs(s.requests, 1, rpw, q.windowMs, nowMs);
    if (max !== undefined && s.slots >= max) {
      // A slot frees within a moment; a window's quota spent as well, not before it refills.
      const wait = Math.max(BUSY_RETRY_MS, tokenWait, requestWait);
      const retryAfterMs = boundedRetryMs(wait, q.windowMs);
      return { ok: false, reason: 'tenant_concurrency', retryAfterMs, ...standings(s, q, nowMs) };
    }
    if (tokenWait > 0 || requestWait > 0) {
      // The longer wait is the one a retry must sit out: the other is over by then.
      const reason = requestWait > tokenWait ? 'tenant_requests' : 'tenant_tokens';
      const retryAfterMs = boundedRetryMs(Math.max(tokenWait, requestWait), q.windowMs);
      return { ok: false, reason, retryAfterMs, ...standings(s, q, nowMs) };
    }
    if (limit !== undefined) s.tokens = quotaCharge(s.tokens, ask.tokens, limit, q.windowMs, nowMs);
    if (rpw !== undefined) s.requests = quotaCharge(s.requests, 1, rpw, q.windowMs, nowMs);
    chargeRetryBudget(s.retry, ask.attempt, ask.retryBudgetRatio, nowMs);
    if (max !== undefined) s.slots++;
    if (max !== undefined || limit !== undefined || rpw !== undefined) {
      s.held.set(ask.requestId, {
        tokens: limit === undefined ? null : ask.tokens,
        request: rpw !== undefined,
        slot: max !== undefined,
        quotas: q,
      });
    }
    const lease = { tenant: ask.tenant, requestId: ask.requestId };
    return { ok: true, lease, ...standings(s, q, nowMs) };
  }

  /**
   * The request is over, having used `usedTokens` (prompt + output; 0 if it never ran): its
   * slot is freed and its charge settled. Releasing twice, or a lease that held nothing,
   * changes nothing.
   */
  release(lease: LedgerLease, usedTokens: Tokens, nowMs: Ms): void {
    const s = this.#tenants.get(lease.tenant);
    const held = s?.held.get(lease.requestId);
    if (s === undefined || held === undefined) return;
    s.held.delete(lease.requestId);
    if (held.slot) s.slots = Math.max(0, s.slots - 1);
    const q = held.quotas;
    if (held.tokens !== null && s.tokens !== null && q.tokensPerWindow !== undefined) {
      const delta = usedTokens - held.tokens;
      s.tokens = quotaCorrect(s.tokens, delta, q.tokensPerWindow, q.windowMs, nowMs);
    }
    // A request that never ran was not served: the request it took is given back.
    if (
      held.request &&
      usedTokens === 0 &&
      s.requests !== null &&
      q.requestsPerWindow !== undefined
    ) {
      s.requests = quotaCorrect(s.requests, -1, q.requestsPerWindow, q.windowMs, nowMs);
    }
  }

  /** A tenant's state as plain numbers (tests, debugging). */
  snapshot(tenant: string) {
    const s = this.#tenants.get(tenant);
    if (s === undefined) return undefined;
    return {
      tokens: s.tokens?.level ?? null,
      requests: s.requests?.level ?? null,
      slots: s.slots,
      retries: s.retry.level,
    };
  }
}

/** A replica's conservative share of its tenant's quotas when it counts alone. */
export function localShare(q: TenantQuotas, replicas: number): TenantQuotas {
  if (replicas <= 1) return q;
  return {
    ...q,
    tokensPerWindow: q.tokensPerWindow === undefined ? undefined : q.tokensPerWindow / replicas,
    // A share below one request would refuse every request, however long it waited.
    requestsPerWindow:
      q.requestsPerWindow === undefined ? undefined : Math.max(1, q.requestsPerWindow / replicas),
    maxConcurrentRequests:
      q.maxConcurrentRequests === undefined
        ? undefined
        : Math.max(1, Math.floor(q.maxConcurrentRequests / replicas)),
  };
}

/**
 * The refusal of a request that asks more tokens than its tenant's whole window allows: no
 * retry can succeed, however long it waits, so it is final (no Retry-After; hosts say
 * `x-should-retry: false`) where a spent budget's refusal says when to come back. Undefined when
 * the window can hold it. Checked at the door before the ledger, by the gateway and the
 * simulator alike.
 */
export function beyondWindow(
  tokens: Tokens,
  quotas: TenantQuotas,
): Extract<AdmissionDecision, { outcome: 'reject' }> | undefined {
  const limit = quotas.tokensPerWindow;
  if (limit === undefined || tokens <= limit) return undefined;
  return { outcome: 'reject', status: 429, reason: 'tenant_tokens', final: true };
}

/** Where each quota `q` limits stands for the account `s` at `nowMs`. */
function standings(s: TenantAccount, q: TenantQuotas, nowMs: Ms): Standings {
  const at = (bucket: TokenBucket | null, limit: number) =>
    quotaStanding(quotaLevel(bucket, limit, q.windowMs, nowMs), limit, q.windowMs);
  const tokens = q.tokensPerWindow === undefined ? {} : { tokens: at(s.tokens, q.tokensPerWindow) };
  const rpw = q.requestsPerWindow;
  return rpw === undefined ? tokens : { ...tokens, requests: at(s.requests, rpw) };
}
