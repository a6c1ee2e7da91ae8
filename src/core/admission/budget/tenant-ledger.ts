/**
 * The tenant-accounting port, in memory: a tenant's token quota, its concurrency slots and its
 * retry budget, taken once per request at the door — before the pipeline — by the gateway and
 * the simulator alike, so what the simulator predicts is what the gateway enforces. The Redis
 * store (src/gateway/shared) implements the same rules atomically in Lua, so several gateways
 * enforce each limit once, globally; the gateway's in-memory store wraps this ledger.
 *
 * Rules: `admit` is all or nothing — a refusal takes nothing; a grant takes the charge from the
 * tenant's token bucket, one slot when the tenant has a concurrency limit, and one retry when
 * the attempt is a retry (a first attempt deposits `retryBudgetRatio` of one). Every refusal is
 * a 429 with a Retry-After in [1 ms, the window] (60 s for the retry budget). `release(used)`
 * frees the slot and settles the bucket by (used − charged) once: a request refused later, or
 * expired before it ran, used nothing and gets its whole charge back. Plain data throughout:
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

export type TenantReason = 'tenant_tokens' | 'tenant_concurrency' | 'retry_budget';

/** What a grant took, to be given back once by `release`. */
export interface LedgerLease {
  readonly tenant: string;
  readonly requestId: string;
}

/**
 * Where a tenant's token quota stands after a verdict — what OpenAI's rate-limit headers tell a
 * client (`x-ratelimit-*-tokens`): its tokens a window, those left (after a grant's charge), and
 * how long until the bucket is full again.
 */
export interface TokenStanding {
  readonly limit: Tokens;
  readonly remaining: Tokens;
  readonly resetMs: Ms;
}

/** The standing of a bucket at `level` (below zero: in debt) of `limit` tokens a window. */
export function tokenStanding(level: number, limit: Tokens, windowMs: Ms): TokenStanding {
  const resetMs = Math.max(0, Math.ceil(((limit - level) * windowMs) / limit));
  return { limit, remaining: Math.max(0, Math.floor(level)), resetMs };
}

/** A verdict; `tokens`: the quota's standing, when the tenant has a token limit. */
export type LedgerVerdict =
  | { readonly ok: true; readonly lease: LedgerLease; readonly tokens?: TokenStanding }
  | {
      readonly ok: false;
      readonly reason: TenantReason;
      readonly retryAfterMs: Ms;
      readonly tokens?: TokenStanding;
    };

interface Held {
  /** Charged to the bucket, or null when the tenant has no token limit. */
  readonly tokens: Tokens | null;
  readonly slot: boolean;
  readonly quotas: TenantQuotas;
}

interface TenantAccount {
  tokens: TokenBucket | null;
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
      s = { tokens: null, slots: 0, retry: newRetryBudget(nowMs), held: new Map() };
      this.#tenants.set(ask.tenant, s);
    }
    const retry = checkRetryBudget(s.retry, ask.attempt, nowMs);
    if (!retry.pass) {
      return { ok: false, reason: 'retry_budget', retryAfterMs: retry.retryAfterMs ?? 1 };
    }
    const max = q.maxConcurrentRequests;
    if (max !== undefined && s.slots >= max) {
      const retryAfterMs = boundedRetryMs(BUSY_RETRY_MS, q.windowMs);
      return { ok: false, reason: 'tenant_concurrency', retryAfterMs };
    }
    const limit = q.tokensPerWindow;
    const wait = quotaWaitMs(s.tokens, ask.tokens, limit, q.windowMs, nowMs);
    // A wait means a token limit.
    if (limit !== undefined && wait > 0) {
      const level = quotaLevel(s.tokens, limit, q.windowMs, nowMs);
      const tokens = tokenStanding(level, limit, q.windowMs);
      const retryAfterMs = boundedRetryMs(wait, q.windowMs);
      return { ok: false, reason: 'tenant_tokens', retryAfterMs, tokens };
    }
    if (limit !== undefined) s.tokens = quotaCharge(s.tokens, ask.tokens, limit, q.windowMs, nowMs);
    chargeRetryBudget(s.retry, ask.attempt, ask.retryBudgetRatio, nowMs);
    if (max !== undefined) s.slots++;
    if (max !== undefined || limit !== undefined) {
      s.held.set(ask.requestId, {
        tokens: limit === undefined ? null : ask.tokens,
        slot: max !== undefined,
        quotas: q,
      });
    }
    const lease = { tenant: ask.tenant, requestId: ask.requestId };
    if (s.tokens === null || limit === undefined) return { ok: true, lease };
    return { ok: true, lease, tokens: tokenStanding(s.tokens.level, limit, q.windowMs) };
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
  }

  /** A tenant's state as plain numbers (tests, debugging). */
  snapshot(tenant: string) {
    const s = this.#tenants.get(tenant);
    if (s === undefined) return undefined;
    return { tokens: s.tokens?.level ?? null, slots: s.slots, retries: s.retry.level };
  }
}

/** A replica's conservative share of its tenant's quotas when it counts alone. */
export function localShare(q: TenantQuotas, replicas: number): TenantQuotas {
  if (replicas <= 1) return q;
  return {
    ...q,
    tokensPerWindow: q.tokensPerWindow === undefined ? undefined : q.tokensPerWindow / replicas,
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
