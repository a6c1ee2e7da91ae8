// The Redis store against a real redis-server: the SharedStore conformance suite, plus what only
// Redis has — keys namespaced and all with a TTL, idempotency keys of the format before
// fingerprints still read, leases of a dead gateway expiring, scripts reloaded after the server
// forgot them, and no crash when the server is not there.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createClient } from 'redis';
import { RedisStore, type RedisStoreOptions } from '../../src/gateway/shared/redis-store.ts';
import { sharedStoreConformance } from '../../src/gateway/shared/store-conformance.ts';
import { responseStoreConformance } from '../../src/gateway/shared/response-conformance.ts';
import { turnStoreConformance } from '../../src/gateway/shared/turn-conformance.ts';
import type { TenantAsk } from '../../src/gateway/shared/shared-store.ts';
import { tenantKeys } from '../../src/gateway/shared/redis-keys.ts';
import { wallClock } from '../../src/runtime/wall-clock.ts';
import { wallTimers } from '../../src/runtime/wall-timers.ts';
import { freePort, startRedis } from './redis-kit.ts';
import { until } from './gateway-kit.ts';

const redis = await startRedis();

/** A store, connected (as the failover store's first ping makes sure in the gateway). */
async function open(extra: Partial<RedisStoreOptions> = {}): Promise<RedisStore> {
  const store = new RedisStore({
    url: redis.url,
    clock: wallClock,
    timers: wallTimers(),
    newId: () => randomUUID(),
    ...extra,
  });
  after(() => store.close());
  if (extra.url === undefined) await store.ping();
  return store;
}

const shared = await open();
sharedStoreConformance('redis', () => shared);
responseStoreConformance('redis', () => shared);
turnStoreConformance('redis', () => shared);

const ask = (over: Partial<TenantAsk>): TenantAsk => ({
  tenant: 'acme',
  requestId: randomUUID(),
  tokens: 10,
  attempt: 1,
  quotas: { windowMs: 60_000, tokensPerWindow: 1_000, maxConcurrentRequests: 1 },
  retryBudgetRatio: 0.2,
  ...over,
});

test('every key is namespaced goodput: and has a TTL', async () => {
  const s = await open();
  const v = await s.admit(ask({ tenant: 'ttl' }));
  const c = await s.claim('ttl', 'k', 'fp');
  if (c.kind === 'claimed') await c.hold.complete({ status: 200, body: '{}', headers: {} });
  await s.saveResponse('ttl', 'resp_1', '{}');
  const raw = createClient({ url: redis.url });
  await raw.connect();
  const keys = await raw.keys('*');
  assert.ok(keys.length >= 5, keys.join());
  assert.ok(keys.includes('goodput:{ttl}:resp:resp_1'), keys.join());
  for (const key of keys) {
    assert.match(key, /^goodput:/);
    assert.ok((await raw.pTTL(key)) > 0, `${key} has a TTL`);
  }
  raw.destroy();
  if (v.ok) await v.lease.release();
});

test("a replica's autoscaling tick holds for its TTL on Redis's clock, then is gone", async () => {
  const s = await open();
  const [gone, stays] = [randomUUID(), randomUUID()];
  await s.postWindow(gone, 'tick', 40);
  await s.postWindow(stays, 'tick', 60_000);
  await new Promise((r) => setTimeout(r, 80));
  assert.equal((await s.windows()).has(gone), false);
  assert.equal((await s.windows()).get(stays), 'tick');
});

test("a tenant's token debt is kept until its bucket is full again, not forgiven after a window", async () => {
  const s = await open();
  const quotas = { windowMs: 1_000, tokensPerWindow: 1_000 };
  const v = await s.admit(ask({ tenant: 'debt', tokens: 500, quotas }));
  assert.ok(v.ok);
  // It used ten times its charge: 4,000 in debt, five windows to refill.
  await v.lease.release(5_000);
  const raw = createClient({ url: redis.url });
  await raw.connect();
  const ttl = await raw.pTTL(tenantKeys('debt').tokens);
  raw.destroy();
  assert.ok(ttl > 4_500 && ttl <= 6_000, `kept ${ttl} ms`);
  assert.equal((await s.admit(ask({ tenant: 'debt', tokens: 100, quotas }))).ok, false);
});

test('a key written before fingerprints (I<holder>, D<answer>) is read as bound to none', async () => {
  const s = await open();
  const raw = createClient({ url: redis.url });
  await raw.connect();
  const answer = { status: 200, body: '{"old":true}', headers: {} };
  const key = (k: string) => `goodput:{legacy}:idem:${k}`;
  await raw.sendCommand(['SET', key('done'), `D${JSON.stringify(answer)}`, 'PX', '60000']);
  await raw.sendCommand(['SET', key('held'), 'Ian-old-holder', 'PX', '60000']);
  raw.destroy();
  assert.deepEqual(await s.claim('legacy', 'done', 'any'), { kind: 'done', response: answer });
  assert.equal((await s.claim('legacy', 'held', 'any')).kind, 'in_flight');
});

test("a dead gateway's concurrency slot frees itself when its lease expires", async () => {
  // Long enough to outlast the close on a busy machine (30 ms did not), short enough to wait out.
  const dying = await open({ leaseTtlMs: 1_500 });
  const q = { windowMs: 60_000, maxConcurrentRequests: 1 };
  assert.equal((await dying.admit(ask({ tenant: 'lease', quotas: q }))).ok, true);
  await dying.close(); // gone without releasing, as a crashed process would be
  const other = await open();
  const refused = await other.admit(ask({ tenant: 'lease', quotas: q }));
  assert.equal(refused.ok, false, 'held until it expires');
  await until(async () => (await other.admit(ask({ tenant: 'lease', quotas: q }))).ok, 2_000);
});

test('scripts the server forgot are loaded again', async () => {
  const s = await open();
  await s.admit(ask({ tenant: 'flush' }));
  const raw = createClient({ url: redis.url });
  await raw.connect();
  await raw.scriptFlush();
  raw.destroy();
  assert.equal((await s.admit(ask({ tenant: 'flush', quotas: { windowMs: 1_000 } }))).ok, true);
});

test('no server: calls reject, nothing crashes', async () => {
  const errors: Error[] = [];
  const s = await open({
    url: `redis://127.0.0.1:${await freePort()}`,
    connectTimeoutMs: 200,
    onError: (e) => errors.push(e),
  });
  await assert.rejects(s.ping());
  await assert.rejects(s.admit(ask({})));
  await assert.rejects(s.claim('acme', 'k', 'fp'));
  await assert.rejects(s.loadResponse('acme', 'resp_1'));
  await until(() => errors.length > 0);
});

test('a Redis that hangs is refused at the command timeout, as one that is down', async () => {
  const s = await open({ commandTimeoutMs: 300 });
  const raw = createClient({ url: redis.url });
  await raw.connect();
  // Every other client's commands wait, as behind a stopped server or a network dropping packets.
  await raw.sendCommand(['CLIENT', 'PAUSE', '1500', 'ALL']);
  raw.destroy();
  const started = Date.now();
  await assert.rejects(s.ping(), /no answer from Redis within 300 ms/);
  await assert.rejects(s.admit(ask({})), /no answer from Redis within 300 ms/);
  assert.ok(Date.now() - started < 1_200, `refused in ${Date.now() - started} ms`);
  // Once it answers again, so does the store.
  await until(async () => {
    try {
      await s.ping();
      return true;
    } catch {
      return false;
    }
  }, 1_000);
});

test('a grant Redis makes after the door gave up on it is given back: no slot, token or request stays taken', async () => {
  const s = await open({ commandTimeoutMs: 300 });
  // An hour's window: what a stray charge took would not refill while the test waits.
  const quotas = {
    windowMs: 3_600_000,
    tokensPerWindow: 1_000,
    requestsPerWindow: 1,
    maxConcurrentRequests: 1,
  };
  const raw = createClient({ url: redis.url });
  await raw.connect();
  await raw.sendCommand(['CLIENT', 'PAUSE', '800', 'ALL']);
  raw.destroy();
  const whole = ask({ tenant: 'late', tokens: 1_000, quotas });
  await assert.rejects(s.admit(whole), /no answer from Redis within 300 ms/);
  // The paused ADMIT runs once Redis answers again, and takes the whole of every quota; until
  // it is given back, the same request is refused.
  await until(async () => {
    try {
      return (await s.admit({ ...whole, requestId: randomUUID() })).ok;
    } catch {
      return false;
    }
  }, 400);
});

/** Every client's commands wait `ms` behind a pause, as behind a stopped Redis. */
async function pauseRedis(ms: number): Promise<void> {
  const raw = createClient({ url: redis.url });
  await raw.connect();
  await raw.sendCommand(['CLIENT', 'PAUSE', String(ms), 'ALL']);
  raw.destroy();
}

test('a claim Redis makes after the door gave up on it is let go: a retry is not told it is in flight', async () => {
  const s = await open({ commandTimeoutMs: 300 });
  const key = randomUUID();
  // The script loaded first: a paused EVALSHA of an unknown script would do nothing late.
  const warm = await s.claim('acme', randomUUID(), 'f0');
  if (warm.kind === 'claimed') await warm.hold.abandon();
  await pauseRedis(800);
  await assert.rejects(s.claim('acme', key, 'f1'), /no answer from Redis within 300 ms/);
  // The paused CLAIM runs once Redis answers again; nobody holds it, so it is let go.
  await until(async () => {
    try {
      const retry = await s.claim('acme', key, 'f1');
      if (retry.kind === 'claimed') await retry.hold.abandon();
      return retry.kind === 'claimed';
    } catch {
      return false;
    }
  }, 400);
});

test('a store closing while a grant is still to be given back waits a moment for it', async () => {
  const s = await open({ commandTimeoutMs: 200 });
  const quotas = { windowMs: 3_600_000, maxConcurrentRequests: 1 };
  const warm = await s.admit(ask({ tenant: 'warm', quotas }));
  if (warm.ok) await warm.lease.release();
  // A Redis stopped whole: the ADMIT sits unread on its socket, and runs when it resumes, even
  // if the connection was closed meanwhile.
  redis.signal('SIGSTOP');
  await assert.rejects(s.admit(ask({ tenant: 'closing', quotas })), /within 200 ms/);
  setTimeout(() => redis.signal('SIGCONT'), 300);
  await s.close();
  const other = await open();
  const verdict = await other.admit(ask({ tenant: 'closing', quotas }));
  assert.equal(verdict.ok, true, 'the grant made as Redis resumed was given back');
  if (verdict.ok) await verdict.lease.release();
});

test('a Redis that answers but takes no writes is down: its health check writes', async () => {
  const s = await open();
  const raw = createClient({ url: redis.url });
  await raw.connect();
  await raw.sendCommand(['CONFIG', 'SET', 'maxmemory-policy', 'noeviction']);
  await raw.sendCommand(['CONFIG', 'SET', 'maxmemory', '1']);
  try {
    await assert.rejects(s.ping(), /OOM/);
  } finally {
    await raw.sendCommand(['CONFIG', 'SET', 'maxmemory', '0']);
    raw.destroy();
  }
  await s.ping();
});

// Last: it restarts the file's Redis.
test('after Redis restarts empty, the slot of a request still running is held again at its next renewal', async () => {
  const s = await open({ leaseTtlMs: 600 });
  const quotas = { windowMs: 60_000, maxConcurrentRequests: 1 };
  const held = await s.admit(ask({ tenant: 'restarted', quotas }));
  assert.ok(held.ok);
  await redis.kill();
  await redis.restart();
  const raw = createClient({ url: redis.url });
  await raw.connect();
  // Renewed every third of its 600 ms TTL: back once the store has reconnected.
  await until(async () => (await raw.zCard(tenantKeys('restarted').leases)) === 1, 1_000);
  raw.destroy();
  const next = await s.admit(ask({ tenant: 'restarted', quotas }));
  assert.equal(next.ok ? null : next.reason, 'tenant_concurrency');
  await held.lease.release();
});
