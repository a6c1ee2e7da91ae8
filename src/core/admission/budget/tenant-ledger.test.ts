// The tenant ledger: the in-memory rules of the tenant-accounting port (tokens, requests,
// concurrency, retries), which the simulator uses directly and the gateway's memory store
// wraps. The shared-store conformance suite checks the Redis implementation against the same
// rules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TenantQuotas } from '../../request/tenant.ts';
import { RETRY_BUDGET_CAPACITY } from '../retry-budget.ts';
import {
  TenantLedger,
  beyondWindow,
  localShare,
  type LedgerVerdict,
  type TenantAsk,
} from './tenant-ledger.ts';

const WINDOW = 60_000;
let serial = 0;

function ask(quotas: Partial<TenantQuotas>, extra: Partial<TenantAsk> = {}): TenantAsk {
  serial++;
  return {
    tenant: 't1',
    requestId: `r${serial}`,
    tokens: 200,
    attempt: 1,
    quotas: { windowMs: WINDOW, ...quotas },
    retryBudgetRatio: 0.2,
    ...extra,
  };
}

function refused(v: LedgerVerdict): { reason: string; retryAfterMs: number } {
  assert.ok(!v.ok, 'expected a refusal');
  return { reason: v.reason, retryAfterMs: v.retryAfterMs };
}

function granted(v: LedgerVerdict) {
  assert.ok(v.ok, `expected a grant, got ${JSON.stringify(v)}`);
  return v.lease;
}

test('concurrency: slots are taken by grants and freed once by release', () => {
  const l = new TenantLedger();
  const q = { maxConcurrentRequests: 2 };
  const a = granted(l.admit(ask(q), 0));
  granted(l.admit(ask(q), 0));
  assert.deepEqual(refused(l.admit(ask(q), 0)), {
    reason: 'tenant_concurrency',
    retryAfterMs: 1_000,
  });
  l.release(a, 0, 0);
  l.release(a, 0, 0);
  granted(l.admit(ask(q), 0));
  assert.equal(refused(l.admit(ask(q), 0)).reason, 'tenant_concurrency', 'freed once');
});

test('tokens: a grant takes its charge; a refusal takes nothing and says when it would fit', () => {
  const l = new TenantLedger();
  const q = { tokensPerWindow: 1_000 };
  for (let i = 0; i < 4; i++) granted(l.admit(ask(q), 0)); // 800 taken
  // 200 left, 300 needed: 100 more at 1000/60000 per ms.
  assert.deepEqual(refused(l.admit(ask(q, { tokens: 300 }), 0)), {
    reason: 'tenant_tokens',
    retryAfterMs: 6_000,
  });
  granted(l.admit(ask(q, { tokens: 300 }), 6_000));
  assert.deepEqual(refused(l.admit(ask(q, { tokens: 1_001 }), 6_000)), {
    reason: 'tenant_tokens',
    retryAfterMs: WINDOW,
  });
});

test('release settles the charge to what was used: an under-estimate is debt, nothing used is all back', () => {
  const l = new TenantLedger();
  const q = { tokensPerWindow: 1_000 };
  const a = granted(l.admit(ask(q), 0));
  l.release(a, 2_000, 0); // 1,800 over
  assert.equal(l.snapshot('t1')?.tokens, -1_000);
  // 1,200 short at 1/60 per ms is 72 s: the header says one window, the next answer the rest.
  assert.equal(refused(l.admit(ask(q), 0)).retryAfterMs, WINDOW);
  assert.equal(refused(l.admit(ask(q), WINDOW)).retryAfterMs, 12_000);
  const b = granted(l.admit(ask(q), 72_000));
  l.release(b, 0, 72_000); // refused later, or expired before it ran: all of it back
  assert.equal(l.snapshot('t1')?.tokens, 200);
  l.release(b, 0, 72_000);
  assert.equal(l.snapshot('t1')?.tokens, 200, 'settled once');
});

test('an over-estimate comes back, never above the limit', () => {
  const l = new TenantLedger();
  const q = { tokensPerWindow: 1_000 };
  const a = granted(l.admit(ask(q, { tokens: 600 }), 0));
  l.release(a, 100, 0);
  assert.equal(l.snapshot('t1')?.tokens, 900);
  const b = granted(l.admit(ask(q, { tokens: 100 }), 0));
  l.release(b, 0, WINDOW);
  assert.equal(l.snapshot('t1')?.tokens, 1_000);
});

test('retries: first attempts deposit, retries withdraw until the budget is spent, then 429', () => {
  const l = new TenantLedger();
  let retries = 0;
  while (l.admit(ask({}, { attempt: 2 }), 0).ok) retries++;
  assert.equal(retries, RETRY_BUDGET_CAPACITY / 2);
  assert.deepEqual(refused(l.admit(ask({}, { attempt: 3 }), 0)), {
    reason: 'retry_budget',
    retryAfterMs: 1_000,
  });
  for (let i = 0; i < 5; i++) granted(l.admit(ask({}), 0));
  granted(l.admit(ask({}, { attempt: 2 }), 0)); // five first attempts at 0.2 buy one
});

test('a refusal takes nothing: the order of checks never leaves a partial charge', () => {
  const l = new TenantLedger();
  const q = { tokensPerWindow: 1_000, maxConcurrentRequests: 1 };
  granted(l.admit(ask(q, { tokens: 900 }), 0));
  const before = l.snapshot('t1');
  refused(l.admit(ask(q, { tokens: 50 }), 0)); // concurrency
  refused(l.admit(ask({ tokensPerWindow: 1_000 }, { tokens: 500 }), 0)); // tokens
  assert.deepEqual(l.snapshot('t1'), before);
});

test('requests: a window holds so many; the next waits until one refills; one that never ran is given back', () => {
  const l = new TenantLedger();
  const q = { requestsPerWindow: 2 };
  const a = granted(l.admit(ask(q), 0));
  const b = l.admit(ask(q), 0);
  assert.deepEqual(b.ok ? b.requests : null, { limit: 2, remaining: 0, resetMs: WINDOW });
  const no = l.admit(ask(q), 0);
  assert.deepEqual(refused(no), { reason: 'tenant_requests', retryAfterMs: WINDOW / 2 });
  assert.deepEqual(no.requests, { limit: 2, remaining: 0, resetMs: WINDOW });
  granted(l.admit(ask(q), WINDOW / 2));
  l.release(a, 0, WINDOW / 2);
  granted(l.admit(ask(q), WINDOW / 2));
  assert.equal(refused(l.admit(ask(q), WINDOW / 2)).reason, 'tenant_requests', 'given back once');
});

test('tokens and requests both short: the longer wait names the refusal and is its Retry-After', () => {
  const l = new TenantLedger();
  const q = { tokensPerWindow: 1_000, requestsPerWindow: 2 };
  granted(l.admit(ask(q, { tokens: 500 }), 0));
  granted(l.admit(ask(q, { tokens: 400 }), 0));
  // 100 tokens short (6 s) and no request left (30 s): a retry in 6 s would be refused again.
  assert.deepEqual(refused(l.admit(ask(q, { tokens: 200 }), 0)), {
    reason: 'tenant_requests',
    retryAfterMs: 30_000,
  });
  // At 30 s a request has refilled, and tokens to 600: 900 is short by 300 (18 s).
  assert.deepEqual(refused(l.admit(ask(q, { tokens: 900 }), 30_000)), {
    reason: 'tenant_tokens',
    retryAfterMs: 18_000,
  });
  granted(l.admit(ask(q, { tokens: 900 }), 48_000));
});

test('counting alone, each of n gateways enforces 1/n of every limit (at least one slot, one request)', () => {
  const q: TenantQuotas = {
    windowMs: WINDOW,
    tokensPerWindow: 1_000,
    requestsPerWindow: 6,
    maxConcurrentRequests: 5,
  };
  assert.deepEqual(localShare(q, 1), q);
  assert.deepEqual(localShare(q, 2), {
    ...q,
    tokensPerWindow: 500,
    requestsPerWindow: 3,
    maxConcurrentRequests: 2,
  });
  assert.equal(localShare(q, 10).maxConcurrentRequests, 1);
  assert.equal(localShare(q, 10).requestsPerWindow, 1);
  const l = new TenantLedger({ replicas: 2 });
  assert.equal(refused(l.admit(ask(q, { tokens: 600 }), 0)).reason, 'tenant_tokens');
  const r = { requestsPerWindow: 6 };
  for (let i = 0; i < 3; i++) granted(l.admit(ask(r, { tenant: 't2' }), 0));
  assert.equal(refused(l.admit(ask(r, { tenant: 't2' }), 0)).reason, 'tenant_requests');
});

test('a tenant without limits holds nothing to give back', () => {
  const l = new TenantLedger();
  const a = granted(l.admit(ask({}), 0));
  l.release(a, 5_000, 0);
  assert.deepEqual(l.snapshot('t1'), { tokens: null, requests: null, slots: 0, retries: 10.2 });
});

test('a request larger than the whole window is refused for good; one that fits is not', () => {
  const quotas = { tokensPerWindow: 300, windowMs: 60_000 };
  assert.deepEqual(beyondWindow(301, quotas), {
    outcome: 'reject',
    status: 429,
    reason: 'tenant_tokens',
    final: true,
  });
  assert.equal(beyondWindow(300, quotas), undefined);
  assert.equal(beyondWindow(10_000, { windowMs: 60_000 }), undefined, 'no token limit');
});
