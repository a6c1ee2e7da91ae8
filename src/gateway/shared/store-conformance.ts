/**
 * The conformance suite of `SharedStore`'s tenant accounting and idempotency claims: the rules
 * in its doc comment, checked the same way over every implementation (memory-store.test.ts,
 * failover-store.test.ts, test/gateway/redis-store.test.ts); its kept responses have their own
 * (response-conformance.ts). Nothing here waits on time: every check holds within one window,
 * whatever the clock does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TenantQuotas } from '../../core/request/tenant.ts';
import type { SharedStore, TenantAsk } from './shared-store.ts';

export const WINDOW = 600_000;
let serial = 0;

/** A tenant no other check touches, so one store can serve both suites. */
export function fresh(): string {
  serial += 1;
  return `tenant ${serial}/{odd}:name`;
}

function ask(
  tenant: string,
  quotas: Partial<TenantQuotas>,
  extra: Partial<TenantAsk> = {},
): TenantAsk {
  serial += 1;
  return {
    tenant,
    requestId: `req-${serial}`,
    tokens: 10,
    attempt: 1,
    quotas: { windowMs: WINDOW, ...quotas },
    retryBudgetRatio: 0.2,
    ...extra,
  };
}

export function sharedStoreConformance(name: string, store: () => SharedStore): void {
  test(`${name}: the token bucket grants until spent; a refusal takes nothing`, async () => {
    const s = store();
    const t = fresh();
    const q = { tokensPerWindow: 100 };
    assert.equal((await s.admit(ask(t, q, { tokens: 60 }))).ok, true);
    const no = await s.admit(ask(t, q, { tokens: 60 }));
    assert.equal(no.ok, false);
    if (no.ok) return;
    assert.equal(no.reason, 'tenant_tokens');
    assert.ok(no.retryAfterMs >= 1 && no.retryAfterMs <= WINDOW, String(no.retryAfterMs));
    assert.equal((await s.admit(ask(t, q, { tokens: 39 }))).ok, true, 'the refusal took nothing');
    const tooBig = await s.admit(ask(fresh(), q, { tokens: 101 }));
    assert.deepEqual(tooBig.ok ? null : [tooBig.reason, tooBig.retryAfterMs], [
      'tenant_tokens',
      WINDOW,
    ]);
  });

  test(`${name}: release settles the token charge to what the request used, once`, async () => {
    const s = store();
    const q = { tokensPerWindow: 100 };
    const t = fresh();
    const a = await s.admit(ask(t, q, { tokens: 60 }));
    assert.ok(a.ok);
    assert.equal((await s.admit(ask(t, q, { tokens: 60 }))).ok, false);
    await a.lease.release(20);
    await a.lease.release(20);
    assert.equal((await s.admit(ask(t, q, { tokens: 60 }))).ok, true, '40 given back');
    assert.equal((await s.admit(ask(t, q, { tokens: 60 }))).ok, false, 'given back once');
    const u = fresh();
    const b = await s.admit(ask(u, q, { tokens: 10 }));
    assert.ok(b.ok);
    await b.lease.release(100);
    assert.equal((await s.admit(ask(u, q, { tokens: 10 }))).ok, false, 'drawn to what it used');
  });

  test(`${name}: a tenant with a token limit is told where its bucket stands`, async () => {
    const s = store();
    const q = { tokensPerWindow: 100 };
    const t = fresh();
    const standing = (v: Awaited<ReturnType<SharedStore['admit']>>) =>
      v.tokens === undefined ? undefined : [v.tokens.limit, v.tokens.remaining];
    const a = await s.admit(ask(t, q, { tokens: 60 }));
    assert.deepEqual(standing(a), [100, 40], 'after its charge');
    // Full again once the 60 drawn refill: 0.6 of the window (less what refilled meanwhile).
    const reset = a.tokens?.resetMs ?? 0;
    assert.ok(reset > 0.55 * WINDOW && reset <= 0.6 * WINDOW, String(reset));
    const no = await s.admit(ask(t, q, { tokens: 60 }));
    assert.equal(no.ok, false);
    assert.deepEqual(standing(no), [100, 40], 'as it stood: the refusal took nothing');
    // In debt (it used more than it was charged): none left, and longer than a window to full.
    const u = fresh();
    const b = await s.admit(ask(u, q, { tokens: 10 }));
    assert.ok(b.ok);
    await b.lease.release(150);
    const owed = await s.admit(ask(u, q, { tokens: 10 }));
    assert.deepEqual(standing(owed), [100, 0]);
    assert.ok((owed.tokens?.resetMs ?? 0) > WINDOW, String(owed.tokens?.resetMs));
    // No token limit, or refused for another reason: nothing to tell.
    const c = await s.admit(ask(fresh(), { maxConcurrentRequests: 1 }));
    assert.equal(c.tokens, undefined);
    if (c.ok) await c.lease.release();
  });

  test(`${name}: the request bucket grants a window's requests; one that never ran is given back`, async () => {
    const s = store();
    const t = fresh();
    const q = { requestsPerWindow: 3 };
    const leases = [];
    for (let i = 0; i < 3; i++) {
      const v = await s.admit(ask(t, q));
      assert.ok(v.ok);
      assert.deepEqual([v.requests?.limit, v.requests?.remaining], [3, 2 - i]);
      assert.equal(v.tokens, undefined, 'no token limit, nothing told of tokens');
      leases.push(v.lease);
    }
    const no = await s.admit(ask(t, q));
    assert.equal(no.ok, false);
    if (no.ok) return;
    assert.equal(no.reason, 'tenant_requests');
    // One request refills in a third of the window, less what refilled meanwhile.
    assert.ok(
      no.retryAfterMs > WINDOW / 3 - 5_000 && no.retryAfterMs <= WINDOW / 3,
      String(no.retryAfterMs),
    );
    assert.deepEqual([no.requests?.limit, no.requests?.remaining], [3, 0]);
    await leases[0]?.release(25);
    assert.equal((await s.admit(ask(t, q))).ok, false, 'one that ran keeps its request');
    await leases[1]?.release(0);
    await leases[1]?.release(0);
    assert.equal((await s.admit(ask(t, q))).ok, true, 'one that never ran gave its request back');
    assert.equal((await s.admit(ask(t, q))).ok, false, 'given back once');
    await leases[2]?.release();
    assert.equal((await s.admit(ask(t, q))).ok, false, 'without a count, the request stands');
  });

  test(`${name}: both buckets short, the longer wait names the refusal and is its Retry-After`, async () => {
    const s = store();
    const q = { tokensPerWindow: 100, requestsPerWindow: 2 };
    const t = fresh();
    assert.ok((await s.admit(ask(t, q, { tokens: 10 }))).ok);
    assert.ok((await s.admit(ask(t, q, { tokens: 10 }))).ok);
    // Requests spent (half a window to one), tokens short by 1 (a hundredth of a window).
    const a = await s.admit(ask(t, q, { tokens: 81 }));
    assert.deepEqual(a.ok ? null : a.reason, 'tenant_requests');
    assert.ok(!a.ok && a.retryAfterMs > 0.45 * WINDOW && a.retryAfterMs <= 0.5 * WINDOW);
    assert.deepEqual([a.tokens?.remaining, a.requests?.remaining], [80, 0], 'both told');
    // Tokens far short (60 more: 0.6 of a window), requests half a window: tokens name it.
    const u = fresh();
    assert.ok((await s.admit(ask(u, q, { tokens: 90 }))).ok);
    assert.ok((await s.admit(ask(u, q, { tokens: 10 }))).ok);
    const b = await s.admit(ask(u, q, { tokens: 60 }));
    assert.deepEqual(b.ok ? null : b.reason, 'tenant_tokens');
    assert.ok(!b.ok && b.retryAfterMs > 0.55 * WINDOW && b.retryAfterMs <= 0.6 * WINDOW);
  });

  test(`${name}: no slot free and the window's tokens spent: told both, waiting out the longer`, async () => {
    const s = store();
    const t = fresh();
    const q = { maxConcurrentRequests: 1, tokensPerWindow: 100 };
    const a = await s.admit(ask(t, q, { tokens: 90 }));
    assert.ok(a.ok);
    const b = await s.admit(ask(t, q, { tokens: 60 }));
    assert.deepEqual(b.ok ? null : b.reason, 'tenant_concurrency');
    // The slot frees in a moment; the 50 tokens it lacks take half a window.
    assert.ok(!b.ok && b.retryAfterMs > 0.45 * WINDOW && b.retryAfterMs <= 0.5 * WINDOW);
    assert.ok(b.tokens !== undefined && b.tokens.remaining <= 10, 'its bucket told');
    await a.lease.release();
  });

  test(`${name}: concurrency slots are leases, freed once by release`, async () => {
    const s = store();
    const t = fresh();
    const q = { maxConcurrentRequests: 2 };
    const a = await s.admit(ask(t, q));
    const b = await s.admit(ask(t, q));
    assert.ok(a.ok && b.ok);
    const c = await s.admit(ask(t, q));
    assert.deepEqual(c.ok ? null : c.reason, 'tenant_concurrency');
    assert.ok(!c.ok && c.retryAfterMs >= 1 && c.retryAfterMs <= WINDOW);
    assert.equal((await s.admit(ask(fresh(), q))).ok, true, 'tenants are apart');
    await a.lease.release();
    await a.lease.release();
    const d = await s.admit(ask(t, q));
    assert.equal(d.ok, true, 'a released slot is free');
    assert.equal((await s.admit(ask(t, q))).ok, false, 'released twice, freed once');
    await b.lease.release();
    if (d.ok) await d.lease.release();
  });

  test(`${name}: concurrent admits never overdraw`, async () => {
    const s = store();
    const t = fresh();
    const all = await Promise.all(
      Array.from({ length: 10 }, () => s.admit(ask(t, { tokensPerWindow: 100 }, { tokens: 30 }))),
    );
    assert.equal(all.filter((v) => v.ok).length, 3);
  });

  test(`${name}: retries draw on the retry budget until it is empty`, async () => {
    const s = store();
    const t = fresh();
    let granted = 0;
    let refusal: { reason: string; retryAfterMs: number } | undefined;
    while (refusal === undefined && granted < 50) {
      const v = await s.admit(ask(t, {}, { attempt: 2, retryBudgetRatio: 0 }));
      if (v.ok) granted++;
      else refusal = v;
    }
    assert.ok(granted >= 5 && granted <= 15, `retries granted before it emptied: ${granted}`);
    assert.equal(refusal?.reason, 'retry_budget');
    assert.ok(refusal.retryAfterMs >= 1 && refusal.retryAfterMs <= 60_000);
    assert.equal((await s.admit(ask(t, {}))).ok, true, 'first attempts are never refused by it');
  });

  test(`${name}: an idempotency key is claimed once, replayed when done, free when abandoned`, async () => {
    const s = store();
    const t = fresh();
    const claims = await Promise.all(Array.from({ length: 5 }, () => s.claim(t, 'k-1', 'fp')));
    const mine = claims.filter((c) => c.kind === 'claimed');
    assert.equal(mine.length, 1, 'one claim wins');
    assert.ok(claims.every((c) => c.kind === 'claimed' || c.kind === 'in_flight'));
    assert.equal((await s.claim(fresh(), 'k-1', 'fp')).kind, 'claimed', 'keys are per tenant');
    // Whatever the names hold: tenant `T` with key `b:k` is not tenant `T:b` with key `k`.
    const [outer, inner] = [fresh(), fresh()];
    const held = await s.claim(`${outer}:${inner}`, 'k', 'fp');
    assert.equal(held.kind, 'claimed');
    assert.equal((await s.claim(outer, `${inner}:k`, 'fp')).kind, 'claimed', 'another tenant');
    if (held.kind === 'claimed') await held.hold.abandon();
    const answer = {
      status: 200,
      body: '{"ok":true}',
      headers: { 'content-type': 'application/json' },
    };
    if (mine[0].kind !== 'claimed') return;
    await mine[0].hold.complete(answer);
    await mine[0].hold.abandon();
    const again = await s.claim(t, 'k-1', 'fp');
    assert.deepEqual(again, { kind: 'done', response: answer }, 'completed, then replayed');
    const other = await s.claim(t, 'k-2', 'fp');
    assert.equal(other.kind, 'claimed');
    if (other.kind === 'claimed') await other.hold.abandon();
    const retried = await s.claim(t, 'k-2', 'fp');
    assert.equal(retried.kind, 'claimed', 'an abandoned key runs again');
    if (retried.kind === 'claimed') await retried.hold.abandon();
  });

  test(`${name}: a key is bound to its request's fingerprint, in flight and once done`, async () => {
    const s = store();
    const t = fresh();
    const first = await s.claim(t, 'k', 'fp');
    assert.equal(first.kind, 'claimed');
    if (first.kind !== 'claimed') return;
    assert.equal((await s.claim(t, 'k', 'fp')).kind, 'in_flight', 'the same request');
    // Fingerprints that extend or contain one another are still different.
    for (const other of ['fp2', 'f', '', '2:fp', 'other'])
      assert.equal((await s.claim(t, 'k', other)).kind, 'mismatch', `in flight, ${other}`);
    const answer = { status: 200, body: '{"n":1}', headers: {} };
    await first.hold.complete(answer);
    assert.deepEqual(await s.claim(t, 'k', 'fp'), { kind: 'done', response: answer });
    for (const other of ['fp2', 'f', '', 'other'])
      assert.equal((await s.claim(t, 'k', other)).kind, 'mismatch', `done, ${other}`);
    const dropped = await s.claim(t, 'k-2', 'fp');
    assert.equal(dropped.kind, 'claimed');
    if (dropped.kind === 'claimed') await dropped.hold.abandon();
    const next = await s.claim(t, 'k-2', 'other');
    assert.equal(next.kind, 'claimed', 'an abandoned key is free for any fingerprint');
    if (next.kind === 'claimed') await next.hold.abandon();
  });

  test(`${name}: of concurrent claims for different requests, one wins, the others mismatch`, async () => {
    const s = store();
    const t = fresh();
    const prints = ['a', 'b', 'a', 'b', 'c', 'a'];
    const claims = await Promise.all(prints.map((fp) => s.claim(t, 'k', fp)));
    const won = claims.findIndex((c) => c.kind === 'claimed');
    assert.ok(won >= 0, 'one claim wins');
    const expected = prints.map((fp, i) =>
      i === won ? 'claimed' : fp === prints[won] ? 'in_flight' : 'mismatch',
    );
    const kinds = claims.map((c) => c.kind);
    assert.deepEqual(kinds, expected);
    const mine = claims[won];
    if (mine.kind === 'claimed') await mine.hold.abandon();
  });

  test(`${name}: an answer too large to keep: its key says the request ran, never runs it again`, async () => {
    const s = store();
    const t = fresh();
    const c = await s.claim(t, 'big', 'fp');
    assert.equal(c.kind, 'claimed');
    if (c.kind !== 'claimed') return;
    await c.hold.complete({ status: 200, body: 'x'.repeat(2 * 1024 * 1024), headers: {} });
    const again = await s.claim(t, 'big', 'fp');
    assert.equal(again.kind, 'done');
    if (again.kind !== 'done') return;
    assert.equal(again.response.status, 409);
    assert.match(again.response.body, /"code":"idempotency_answer_not_kept"/);
  });

  test(`${name}: it answers a ping`, async () => {
    await store().ping();
  });
}
