import { test } from 'node:test';
import assert from 'node:assert/strict';
import { VirtualClock } from '../../runtime/virtual-clock.ts';
import { FailoverStore, type FailurePolicy } from './failover-store.ts';
import { MemoryStore } from './memory-store.ts';
import {
  isSharedStoreUnavailable,
  type SharedStore,
  type TenantAsk,
  type Told,
  type TurnEnd,
} from './shared-store.ts';
import { sharedStoreConformance } from './store-conformance.ts';
import { responseStoreConformance } from './response-conformance.ts';
import { turnStoreConformance } from './turn-conformance.ts';

/** A primary that can be switched off: every call then rejects, as Redis's client does. */
class SwitchableStore implements SharedStore {
  reachable = true;
  calls = 0;
  releases = 0;
  readonly #inner: SharedStore;

  constructor(clock: VirtualClock) {
    this.#inner = new MemoryStore({ clock });
  }

  async admit(ask: TenantAsk) {
    this.#gate();
    const v = await this.#inner.admit(ask);
    if (!v.ok) return v;
    return { ok: true as const, lease: { release: async () => void this.releases++ } };
  }
  async claim(tenant: string, key: string, fingerprint: string) {
    this.#gate();
    return this.#inner.claim(tenant, key, fingerprint);
  }
  async saveResponse(tenant: string, id: string, text: string) {
    this.#gate();
    return this.#inner.saveResponse(tenant, id, text);
  }
  async loadResponse(tenant: string, id: string) {
    this.#gate();
    return this.#inner.loadResponse(tenant, id);
  }
  async loadResponsePrefix(tenant: string, id: string, chars: number) {
    this.#gate();
    return this.#inner.loadResponsePrefix(tenant, id, chars);
  }
  async deleteResponse(tenant: string, id: string) {
    this.#gate();
    return this.#inner.deleteResponse(tenant, id);
  }
  async appendEvents(tenant: string, id: string, events: readonly string[]) {
    this.#gate();
    return this.#inner.appendEvents(tenant, id, events);
  }
  async readEvents(tenant: string, id: string, from: number, max: number) {
    this.#gate();
    return this.#inner.readEvents(tenant, id, from, max);
  }
  async watchEvents(tenant: string, id: string, told: Told) {
    this.#gate();
    return this.#inner.watchEvents(tenant, id, told);
  }
  async keepTurn(tenant: string, key: string, inMs: number, graceMs: number) {
    this.#gate();
    return this.#inner.keepTurn(tenant, key, inMs, graceMs);
  }
  async takeTurn(tenant: string, key: string, earlyMs: number, by: string) {
    this.#gate();
    return this.#inner.takeTurn(tenant, key, earlyMs, by);
  }
  async endTurn(tenant: string, key: string, outcome: TurnEnd['outcome'], by: string) {
    this.#gate();
    return this.#inner.endTurn(tenant, key, outcome, by);
  }
  async watchTurns(told: (end: TurnEnd) => void) {
    this.#gate();
    return this.#inner.watchTurns(told);
  }
  async beat(replica: string, ttlMs: number, serving: boolean) {
    this.#gate();
    return this.#inner.beat(replica, ttlMs, serving);
  }
  async alive(replica: string) {
    this.#gate();
    return this.#inner.alive(replica);
  }
  async serving() {
    this.#gate();
    return this.#inner.serving();
  }
  async postWindow(replica: string, text: string, ttlMs: number) {
    this.#gate();
    return this.#inner.postWindow(replica, text, ttlMs);
  }
  async windows() {
    this.#gate();
    return this.#inner.windows();
  }
  async handOver(order: string) {
    this.#gate();
    return this.#inner.handOver(order);
  }
  async keepOrder(tenant: string, id: string, order: string) {
    this.#gate();
    return this.#inner.keepOrder(tenant, id, order);
  }
  async takeOrder(tenant: string, id: string) {
    this.#gate();
    return this.#inner.takeOrder(tenant, id);
  }
  async dropOrder(tenant: string, id: string) {
    this.#gate();
    return this.#inner.dropOrder(tenant, id);
  }
  async settling(tenant: string, id: string, ttlMs: number) {
    this.#gate();
    return this.#inner.settling(tenant, id, ttlMs);
  }
  async takeHandedOver(max: number) {
    this.#gate();
    return this.#inner.takeHandedOver(max);
  }
  async ping() {
    this.#gate();
  }
  async close() {}

  #gate(): void {
    this.calls++;
    if (!this.reachable) throw new Error('connect ECONNREFUSED');
  }
}

/** Failing open, the store keeps the contract whichever store serves it. */
function overMemory(primaryUp: boolean): FailoverStore {
  const clock = new VirtualClock();
  const down = new SwitchableStore(clock);
  down.reachable = false;
  return new FailoverStore({
    primary: primaryUp ? new MemoryStore({ clock }) : down,
    fallback: new MemoryStore({ clock }),
    policy: 'open',
    clock,
    timers: clock,
  });
}

sharedStoreConformance('failover, primary up', () => overMemory(true));
sharedStoreConformance('failover, primary down', () => overMemory(false));
responseStoreConformance('failover, primary up', () => overMemory(true));
turnStoreConformance('failover, primary up', () => overMemory(true));

const settle = () => new Promise((r) => setImmediate(r));

function setup(policy: FailurePolicy) {
  const clock = new VirtualClock();
  const primary = new SwitchableStore(clock);
  const changes: Array<[boolean, string | undefined]> = [];
  const fallback = new MemoryStore({ clock, replicas: 2 });
  const store = new FailoverStore({
    primary,
    fallback,
    policy,
    clock,
    timers: clock,
    pingEveryMs: 1_000,
    onChange: (up, cause) => changes.push([up, cause]),
  });
  /** Lets the next health ping run to completion. */
  const tick = async () => {
    clock.run(clock.now() + 1_000);
    await settle();
  };
  return { clock, primary, fallback, store, changes, tick };
}

const ask: TenantAsk = {
  tenant: 'acme',
  requestId: 'r',
  tokens: 60,
  attempt: 1,
  quotas: { windowMs: 600_000, tokensPerWindow: 100 },
  retryBudgetRatio: 0.2,
};

test('open: a dead primary fails over once, to local limits, and recovers by ping', async () => {
  const { primary, store, changes, tick } = setup('open');
  await store.start();
  assert.equal((await store.admit(ask)).ok, true, 'served by the primary');
  assert.equal(changes.length, 0);
  primary.reachable = false;
  assert.equal((await store.admit(ask)).ok, false, 'the fallback holds half the quota: 50 < 60');
  assert.deepEqual(changes, [[false, 'Error: connect ECONNREFUSED']]);
  const calls = primary.calls;
  await store.admit({ ...ask, tokens: 10 });
  assert.equal(primary.calls, calls, 'while down, requests do not wait on the primary');
  await tick();
  assert.equal(changes.length, 1, 'one line per transition');
  primary.reachable = true;
  await tick();
  assert.deepEqual(changes.at(-1), [true, undefined]);
  assert.equal(store.up, true);
  assert.equal((await store.admit({ ...ask, tokens: 40 })).ok, true, 'the primary again');
  await store.close();
});

test('open: a key answered, or in flight, in the fallback is not run again through the primary once it is back', async () => {
  const { primary, store, tick } = setup('open');
  await store.start();
  primary.reachable = false;
  const answered = await store.claim('acme', 'k1', 'f');
  const running = await store.claim('acme', 'k2', 'f');
  assert.ok(answered.kind === 'claimed' && running.kind === 'claimed', 'by the fallback');
  const response = { status: 200, headers: {}, body: '{"id":"chatcmpl-1"}' };
  await answered.hold.complete(response);
  primary.reachable = true;
  await tick();
  assert.equal(store.up, true);
  const again = await store.claim('acme', 'k1', 'f');
  assert.equal(again.kind, 'done', 'its answer, replayed');
  assert.equal((await store.claim('acme', 'k2', 'f')).kind, 'in_flight');
  assert.equal((await store.claim('acme', 'k1', 'other')).kind, 'mismatch');
  assert.equal((await store.claim('acme', 'k3', 'f')).kind, 'claimed', 'a new key: the primary');
  await store.close();
});

test('open: keys the fallback took move to the primary once it is back, where other gateways find them', async () => {
  const { primary, store, tick } = setup('open');
  await store.start();
  primary.reachable = false;
  const claimed = async (key: string) => {
    const c = await store.claim('acme', key, 'f');
    assert.ok(c.kind === 'claimed', `${key}: by the fallback`);
    return c.hold;
  };
  const response = { status: 200, headers: {}, body: '{"id":"chatcmpl-1"}' };
  await (await claimed('answered')).complete(response);
  const running = await claimed('running');
  await (await claimed('let-go')).abandon();
  const cut = await claimed('cut');
  primary.reachable = true;
  await tick();
  await settle();
  // Another gateway asks the primary itself.
  const elsewhere = (key: string) => primary.claim('acme', key, 'f');
  const replay = await elsewhere('answered');
  assert.equal(replay.kind, 'done', 'its answer is replayed on every gateway');
  assert.equal(replay.kind === 'done' && replay.response.body, response.body);
  assert.equal((await elsewhere('running')).kind, 'in_flight', 'in flight on every gateway');
  assert.equal((await primary.claim('acme', 'running', 'other')).kind, 'mismatch');
  await running.complete({ ...response, body: '{"id":"chatcmpl-2"}' });
  const ended = await elsewhere('running');
  assert.equal(
    ended.kind === 'done' && ended.response.body,
    '{"id":"chatcmpl-2"}',
    'settled there',
  );
  await cut.abandon();
  const again = await elsewhere('cut');
  assert.equal(again.kind, 'claimed', 'a key its request let go is free on every gateway');
  const free = await elsewhere('let-go');
  assert.equal(free.kind, 'claimed', 'one let go before the primary was back was never moved');
  await store.close();
});

test('closed: while the primary is down, calls reject as unavailable with a Retry-After', async () => {
  const { primary, store, changes, tick } = setup('closed');
  primary.reachable = false;
  await store.start();
  assert.deepEqual(changes, [[false, 'Error: connect ECONNREFUSED']], 'known down at start');
  await assert.rejects(
    store.admit(ask),
    (e) => isSharedStoreUnavailable(e) && e.retryAfterMs === 1_000,
  );
  await assert.rejects(store.claim('acme', 'k', 'fp'), isSharedStoreUnavailable);
  primary.reachable = true;
  await tick();
  assert.equal((await store.admit(ask)).ok, true);
  await store.close();
});

test('a lease goes back to the store that granted it, even after a failover', async () => {
  const { primary, store } = setup('open');
  await store.start();
  const v = await store.admit({ ...ask, quotas: { windowMs: 1_000, maxConcurrentRequests: 3 } });
  assert.ok(v.ok);
  primary.reachable = false;
  await store.admit(ask);
  await v.lease.release();
  assert.equal(primary.releases, 1);
  await store.close();
});

test('after close no ping runs', async () => {
  const { clock, store } = setup('open');
  await store.start();
  await store.close();
  clock.run();
  assert.equal(clock.events, 0, 'the scheduled ping was cancelled');
});

test('open: a response kept while the primary is down is found, then moved to the primary; others are unavailable', async () => {
  const { primary, fallback, store, tick } = setup('open');
  await store.start();
  assert.equal(await store.saveResponse('acme', 'resp_up', '{"up":1}'), true);
  primary.reachable = false;
  assert.equal(
    await store.saveResponse('acme', 'resp_down', '{"down":1}'),
    true,
    'in the fallback',
  );
  assert.equal(await store.loadResponse('acme', 'resp_down'), '{"down":1}');
  assert.equal(await store.saveResponse('odd tenant/{x}', 'resp_odd', '{"odd":1}'), true);
  // Kept in the primary, or never kept: the fallback cannot tell, so it does not say "none".
  await assert.rejects(store.loadResponse('acme', 'resp_up'), isSharedStoreUnavailable);
  await assert.rejects(store.loadResponse('acme', 'resp_never'), isSharedStoreUnavailable);
  await assert.rejects(store.deleteResponse('acme', 'resp_up'), isSharedStoreUnavailable);
  primary.reachable = true;
  await tick();
  await settle();
  assert.equal(await store.loadResponse('acme', 'resp_up'), '{"up":1}', 'the primary again');
  assert.equal(await store.loadResponse('acme', 'resp_down'), '{"down":1}', 'still found');
  // Moved to the primary, where every replica finds it.
  assert.equal(await primary.loadResponse('acme', 'resp_down'), '{"down":1}');
  assert.equal(await primary.loadResponse('odd tenant/{x}', 'resp_odd'), '{"odd":1}');
  assert.deepEqual([...fallback.keptResponses()], [], 'and gone from the fallback');
  assert.equal(await store.loadResponse('acme', 'resp_never'), undefined, 'none, now known');
  assert.equal(await store.deleteResponse('acme', 'resp_down'), true);
  assert.equal(await store.deleteResponse('acme', 'resp_down'), false);
  await store.close();
});

test('closed: while the primary is down, kept responses are unavailable', async () => {
  const { primary, store } = setup('closed');
  await store.start();
  primary.reachable = false;
  await assert.rejects(store.saveResponse('acme', 'r', '{}'), isSharedStoreUnavailable);
  await assert.rejects(store.loadResponse('acme', 'r'), isSharedStoreUnavailable);
  await assert.rejects(store.deleteResponse('acme', 'r'), isSharedStoreUnavailable);
  await store.close();
});

test('while the primary is down no replica is taken for gone: only the primary can say', async () => {
  for (const policy of ['open', 'closed'] as const) {
    const { primary, store } = setup(policy);
    await store.start();
    assert.equal(await store.alive('replica-a'), false, policy);
    primary.reachable = false;
    assert.equal(await store.alive('replica-a'), true, `${policy}, down`);
    assert.equal(await store.alive('replica-a'), true, `${policy}, marked down`);
    await store.close();
  }
});

test("a stream's events go to the primary alone: while it is down they wait, so its log numbers them right", async () => {
  const { primary, store, tick } = setup('open');
  await store.start();
  await store.appendEvents('acme', 'resp_s', ['e0']);
  primary.reachable = false;
  await assert.rejects(store.appendEvents('acme', 'resp_s', ['e1']), isSharedStoreUnavailable);
  await assert.rejects(store.appendEvents('acme', 'resp_s', ['e1']), isSharedStoreUnavailable);
  await assert.rejects(store.readEvents('acme', 'resp_s', 1, 10), isSharedStoreUnavailable);
  primary.reachable = true;
  await tick();
  await store.appendEvents('acme', 'resp_s', ['e1']);
  assert.deepEqual(await store.readEvents('acme', 'resp_s', 0, 10), ['e0', 'e1']);
  await store.close();
});
