/**
 * The shared state of one gateway process, in memory: the default store, and the failover
 * store's fallback when Redis is unreachable. Its arithmetic is the policy core's (the quota
 * token bucket, the retry budget), so one process behaves the same with or without Redis. As a
 * fallback it enforces a conservative share of each quota — the limit divided by the number of
 * replicas — since each replica then counts alone. Memory is bounded: one entry per tenant the
 * policy names, and at most `replayCapacity` idempotency keys.
 */
import {
  chargeRetryBudget,
  checkRetryBudget,
  newRetryBudget,
} from '../../core/admission/retry-budget.ts';
import type { RetryBudgetState } from '../../core/admission/retry-budget.ts';
import {
  quotaCharge,
  quotaCorrect,
  quotaWaitMs,
} from '../../core/admission/budget/quota-bucket.ts';
import { BUSY_RETRY_MS } from '../../core/admission/budget/tenant-budgets.ts';
import { boundedRetryMs, type TokenBucket } from '../../core/admission/budget/token-bucket.ts';
import type { Clock } from '../../core/ports/clock.ts';
import type { TenantQuotas } from '../../core/request/tenant.ts';
import type { Ms } from '../../core/request/units.ts';
import { BoundedMap } from '../bounded-map.ts';
import {
  NO_LEASE,
  REPLAY_MAX_BYTES,
  type Claim,
  type QuotaVerdict,
  type SharedStore,
  type StoredResponse,
  type TenantAsk,
} from './shared-store.ts';

export interface MemoryStoreOptions {
  readonly clock: Clock;
  /** Replicas that share the quotas: each limit is divided by it (1: the whole limit). */
  readonly replicas?: number;
  /** How long a completed answer is replayed. */
  readonly replayTtlMs?: Ms;
  readonly replayCapacity?: number;
}

interface TenantState {
  tokens: TokenBucket | null;
  readonly leases: Set<string>;
  readonly retry: RetryBudgetState;
}

/**
 * An idempotency key in flight (no response yet), done (its answer), or released (null). The
 * entry's identity names its holder; its fingerprint, the request it is bound to.
 */
type KeyState = { readonly fingerprint: string; readonly response?: StoredResponse } | null;

export class MemoryStore implements SharedStore {
  readonly #clock: Clock;
  readonly #replicas: number;
  readonly #tenants = new Map<string, TenantState>();
  readonly #keys: BoundedMap<KeyState>;

  constructor(o: MemoryStoreOptions) {
    this.#clock = o.clock;
    this.#replicas = o.replicas ?? 1;
    this.#keys = new BoundedMap(o.replayCapacity ?? 10_000, o.replayTtlMs ?? 600_000);
  }

  async admit(ask: TenantAsk): Promise<QuotaVerdict> {
    const now = this.#clock.now();
    const q = localShare(ask.quotas, this.#replicas);
    let s = this.#tenants.get(ask.tenant);
    if (s === undefined) {
      s = { tokens: null, leases: new Set(), retry: newRetryBudget(now) };
      this.#tenants.set(ask.tenant, s);
    }
    const retry = checkRetryBudget(s.retry, ask.attempt, now);
    if (!retry.pass)
      return { ok: false, reason: 'retry_budget', retryAfterMs: retry.retryAfterMs ?? 1 };
    const max = q.maxConcurrentRequests;
    if (max !== undefined && s.leases.size >= max) {
      return {
        ok: false,
        reason: 'tenant_concurrency',
        retryAfterMs: boundedRetryMs(BUSY_RETRY_MS, q.windowMs),
      };
    }
    const limit = q.tokensPerWindow;
    const wait = quotaWaitMs(s.tokens, ask.tokens, limit, q.windowMs, now);
    if (wait > 0)
      return { ok: false, reason: 'tenant_tokens', retryAfterMs: boundedRetryMs(wait, q.windowMs) };
    if (limit !== undefined) s.tokens = quotaCharge(s.tokens, ask.tokens, limit, q.windowMs, now);
    chargeRetryBudget(s.retry, ask.attempt, ask.retryBudgetRatio, now);
    if (max === undefined && limit === undefined) return { ok: true, lease: NO_LEASE };
    const tenant = s;
    if (max !== undefined) tenant.leases.add(ask.requestId);
    let released = false;
    const release = async (usedTokens?: number) => {
      if (released) return;
      released = true;
      tenant.leases.delete(ask.requestId);
      if (limit === undefined || usedTokens === undefined || tenant.tokens === null) return;
      const delta = usedTokens - ask.tokens;
      tenant.tokens = quotaCorrect(tenant.tokens, delta, limit, q.windowMs, this.#clock.now());
    };
    return { ok: true, lease: { release } };
  }

  async claim(tenant: string, key: string, fingerprint: string): Promise<Claim> {
    const id = `${tenant}:${key}`;
    const now = this.#clock.now();
    const state = this.#keys.get(id, now);
    if (state != null) {
      if (state.fingerprint !== fingerprint) return { kind: 'mismatch' };
      return state.response === undefined
        ? { kind: 'in_flight' }
        : { kind: 'done', response: state.response };
    }
    const mine: KeyState = { fingerprint };
    this.#keys.set(id, mine, now);
    // Only the holder's own entry is ever replaced: an evicted key claimed again is not touched.
    const settle = (next: KeyState) => {
      if (this.#keys.get(id, this.#clock.now()) === mine)
        this.#keys.set(id, next, this.#clock.now());
    };
    return {
      kind: 'claimed',
      hold: {
        complete: async (response) =>
          settle(response.body.length <= REPLAY_MAX_BYTES ? { fingerprint, response } : null),
        abandon: async () => settle(null),
      },
    };
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}
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
