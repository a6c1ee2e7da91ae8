import { test } from 'node:test';
import assert from 'node:assert/strict';
import { VirtualClock } from '../../runtime/virtual-clock.ts';
import { MemoryStore } from './memory-store.ts';
import { localShare } from '../../core/admission/budget/tenant-ledger.ts';
import { sharedStoreConformance } from './store-conformance.ts';
import { responseStoreConformance } from './response-conformance.ts';
import { turnStoreConformance } from './turn-conformance.ts';
import type { TenantAsk } from './shared-store.ts';

sharedStoreConformance('memory', () => new MemoryStore({ clock: new VirtualClock() }));
responseStoreConformance('memory', () => new MemoryStore({ clock: new VirtualClock() }));
turnStoreConformance('memory', () => new MemoryStore({ clock: new VirtualClock() }));

/** Moves the virtual clock to `t` (it moves only by running events). */
function advance(clock: VirtualClock, t: number): void {
  clock.at(t, () => {});
  clock.run(t);
}

const ask = (over: Partial<TenantAsk> = {}): TenantAsk => ({
  tenant: 'acme',
  requestId: 'r',
  tokens: 50,
  attempt: 1,
  quotas: { windowMs: 1_000, tokensPerWindow: 100 },
  retryBudgetRatio: 0.2,
  ...over,
});

test('Retry-After is when the bucket will hold the ask, and it does then', async () => {
  const clock = new VirtualClock();
  const s = new MemoryStore({ clock });
  assert.equal((await s.admit(ask({ tokens: 100 }))).ok, true);
  assert.deepEqual(await s.admit(ask()), {
    ok: false,
    reason: 'tenant_tokens',
    retryAfterMs: 500,
    tokens: { limit: 100, remaining: 0, resetMs: 1_000 },
  });
  advance(clock, 500);
  assert.equal((await s.admit(ask())).ok, true);
});

test('a completed answer is replayed for the replay TTL, then the key is free', async () => {
  const clock = new VirtualClock();
  const s = new MemoryStore({ clock, replayTtlMs: 1_000 });
  const c = await s.claim('acme', 'k', 'fp');
  assert.equal(c.kind, 'claimed');
  if (c.kind === 'claimed') await c.hold.complete({ status: 200, body: 'x', headers: {} });
  assert.equal((await s.claim('acme', 'k', 'fp')).kind, 'done');
  advance(clock, 1_001);
  assert.equal((await s.claim('acme', 'k', 'another request')).kind, 'claimed');
});

test('failing open, each replica enforces its share of every limit', async () => {
  const q = {
    windowMs: 1_000,
    tokensPerWindow: 100,
    requestsPerWindow: 9,
    maxConcurrentRequests: 5,
  };
  assert.deepEqual(localShare(q, 1), q);
  assert.deepEqual(localShare(q, 2), {
    ...q,
    tokensPerWindow: 50,
    requestsPerWindow: 4.5,
    maxConcurrentRequests: 2,
  });
  assert.equal(localShare(q, 10).maxConcurrentRequests, 1, 'never below one slot');
  assert.equal(localShare(q, 10).requestsPerWindow, 1, 'never below one request');
  const s = new MemoryStore({ clock: new VirtualClock(), replicas: 2 });
  assert.equal((await s.admit(ask({ quotas: q, tokens: 50 }))).ok, true);
  assert.equal((await s.admit(ask({ quotas: q, tokens: 1 }))).ok, false);
});

test('a kept response is kept for its TTL, and the oldest are forgotten to make room', async () => {
  const clock = new VirtualClock();
  // Room for two texts of 100 characters (200 bytes each, as the heap holds them).
  const s = new MemoryStore({ clock, responseTtlMs: 1_000, responseCapacityBytes: 450 });
  const text = (c: string) => c.repeat(100);
  assert.equal(await s.saveResponse('acme', 'a', text('a')), true);
  advance(clock, 500);
  assert.equal(await s.saveResponse('acme', 'b', text('b')), true);
  assert.equal(await s.saveResponse('acme', 'c', text('c')), true);
  assert.equal(await s.loadResponse('acme', 'a'), undefined, 'the oldest made room');
  assert.equal(await s.loadResponse('acme', 'b'), text('b'));
  advance(clock, 1_600);
  assert.equal(await s.loadResponse('acme', 'b'), undefined, 'past its TTL');
  assert.equal(await s.deleteResponse('acme', 'c'), false, 'past its TTL: none to delete');
  assert.equal(
    await s.saveResponse('acme', 'd', text('d').repeat(3)),
    false,
    'over the whole room',
  );
});

test("a stream's events share the room of kept responses: the oldest, of either, make room", async () => {
  const clock = new VirtualClock();
  // Room for 225 characters: a response of 100, and a log of 125.
  const s = new MemoryStore({ clock, responseTtlMs: 1_000, responseCapacityBytes: 450 });
  assert.equal(await s.saveResponse('acme', 'a', 'a'.repeat(100)), true);
  advance(clock, 100);
  const events = ['1'.repeat(50), '2'.repeat(50), '3'.repeat(25)];
  await s.appendEvents('acme', 'b', events.slice(0, 2));
  advance(clock, 200);
  // The log grows: it is now younger than the response kept before it, which makes room.
  await s.appendEvents('acme', 'b', events.slice(2));
  assert.equal(await s.saveResponse('acme', 'c', 'c'.repeat(100)), true);
  assert.equal(await s.loadResponse('acme', 'a'), undefined, 'the oldest made room');
  assert.deepEqual(await s.readEvents('acme', 'b', 0, 9), events);
  // Saving its response again keeps its log; events larger than the room add nothing.
  assert.equal(await s.saveResponse('acme', 'b', ''), true);
  assert.deepEqual(await s.readEvents('acme', 'b', 0, 9), events);
  await s.appendEvents('acme', 'b', ['x'.repeat(200)]);
  assert.deepEqual(await s.readEvents('acme', 'b', 0, 9), events);
  advance(clock, 1_300);
  assert.deepEqual(await s.readEvents('acme', 'b', 0, 9), [], 'past its TTL');
});

test("a replica's autoscaling tick holds for its TTL, then is gone", async () => {
  const clock = new VirtualClock();
  const s = new MemoryStore({ clock });
  await s.postWindow('a', 'tick a', 10_000);
  await s.postWindow('b', 'tick b', 20_000);
  clock.at(15_000, () => {});
  clock.run(15_000);
  assert.deepEqual([...(await s.windows())], [['b', 'tick b']]);
});

test("a tenant's flood of idempotency keys forgets only its own: another's answer is still replayed", async () => {
  const s = new MemoryStore({ clock: new VirtualClock(), replayCapacity: 100 });
  const answer = { status: 200, body: '{"ok":true}', headers: {} };
  const victim = await s.claim('victim', 'k-1', 'fp');
  assert.equal(victim.kind, 'claimed');
  if (victim.kind === 'claimed') await victim.hold.complete(answer);
  for (let i = 0; i < 1_000; i++) {
    const c = await s.claim('flooder', `k-${i}`, 'fp');
    if (c.kind === 'claimed') await c.hold.complete(answer);
  }
  assert.deepEqual(await s.claim('victim', 'k-1', 'fp'), { kind: 'done', response: answer });
  assert.equal((await s.claim('flooder', 'k-999', 'fp')).kind, 'done', 'its newest kept');
  assert.equal((await s.claim('flooder', 'k-0', 'fp')).kind, 'claimed', 'its oldest let go');
});

test('room is made from the tenant that holds the most: a flood of large responses forgets its own', async () => {
  const clock = new VirtualClock();
  // Room for 1,000 characters.
  const s = new MemoryStore({ clock, responseTtlMs: 60_000, responseCapacityBytes: 2_000 });
  assert.equal(await s.saveResponse('small', 'mine', 'm'.repeat(100)), true);
  for (let i = 0; i < 20; i++) {
    advance(clock, 10);
    assert.equal(await s.saveResponse('flood', `f${i}`, String(i % 10).repeat(300)), true);
  }
  assert.equal(await s.loadResponse('small', 'mine'), 'm'.repeat(100), 'the older, smaller kept');
  assert.equal(await s.loadResponse('flood', 'f0'), undefined, "the flood's oldest went");
  assert.equal(await s.loadResponse('flood', 'f19'), '9'.repeat(300));
});
