// The election's rules on a virtual clock, over a Lease kept as the API server keeps one (a
// version per write, a write over a stale version refused): one gateway leads and renews; the
// others take the Lease only once it has gone unchanged for its duration, or was released; a
// leader cut off from the API stops leading before anyone else may start, so at no instant do
// two lead; of two taking one expired Lease, one wins; the leader's word reaches the others.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { VirtualClock } from '../runtime/virtual-clock.ts';
import type { LeaseStore, PoolWord } from './kube-lease.ts';
import { memoryLease, passInSteps as pass } from './memory-lease.ts';
import { LeaderElection } from './leader-election.ts';
import { memoryOpsLog } from './ops-log.ts';

function gateway(
  name: string,
  lease: LeaseStore,
  clock: VirtualClock,
  word: () => PoolWord = () => ({ replicas: 1, draining: [] }),
) {
  const heard: (PoolWord | undefined)[] = [];
  const leads: boolean[] = [];
  const election = new LeaderElection({
    lease,
    identity: name,
    clock,
    timers: clock,
    epochMs: () => 1_800_000_000_000 + clock.now(),
    log: memoryOpsLog(),
    word,
    onLead: (leading) => leads.push(leading),
    onWord: (w) => heard.push(w),
  });
  return { election, heard, leads };
}

type Gateway = ReturnType<typeof gateway>;

/** `a` leads (it starts first), then `b` follows; both told what happens for `ms`. */
async function aLeadsB(clock: VirtualClock, a: Gateway, b: Gateway, ms: number): Promise<void> {
  a.election.start();
  await pass(clock, 100);
  b.election.start();
  await pass(clock, ms);
}

test('one leads and renews; the other follows, told its word, and never takes a renewed Lease', async () => {
  const clock = new VirtualClock();
  const api = memoryLease();
  const a = gateway('a', api.view(), clock, () => ({ replicas: 3, draining: [2] }));
  const b = gateway('b', api.view(), clock);
  await aLeadsB(clock, a, b, 60_000);
  assert.deepEqual([a.election.leading, b.election.leading], [true, false]);
  assert.deepEqual(a.leads, [true]);
  assert.deepEqual(b.leads, []);
  assert.deepEqual(b.heard.at(-1), { replicas: 3, draining: [2] });
  assert.equal(api.lease()?.holder, 'a');
  assert.ok(api.writes.length >= 29, `renewed every 2 s: ${api.writes.length} writes`);
  assert.equal(api.lease()?.transitions, 0);
  assert.match(api.lease()?.renewTime ?? '', /^2027-01-15T08:\d\d:\d\d\.\d{6}Z$/);
});

test('a leader cut off steps down before the Lease expires; the other takes it after; never two', async () => {
  const clock = new VirtualClock();
  const api = memoryLease();
  let cut = false;
  const a = gateway(
    'a',
    api.view(() => cut),
    clock,
  );
  const b = gateway('b', api.view(), clock);
  await aLeadsB(clock, a, b, 10_000);
  cut = true;
  const cutAt = clock.now();
  let bothAt: number | undefined;
  let aDownAt: number | undefined;
  let bUpAt: number | undefined;
  await pass(clock, 30_000, () => {
    if (a.election.leading && b.election.leading) bothAt ??= clock.now();
    if (!a.election.leading) aDownAt ??= clock.now() - cutAt;
    if (b.election.leading) bUpAt ??= clock.now() - cutAt;
  });
  assert.equal(bothAt, undefined, 'never two leaders');
  assert.ok(aDownAt !== undefined && aDownAt <= 12_000, `a stepped down after ${aDownAt} ms`);
  assert.ok(bUpAt !== undefined && bUpAt >= 15_000 - 2_000, `b took over after ${bUpAt} ms`);
  assert.ok(bUpAt <= 15_000 + 2_100, `within a round of the Lease expiring: ${bUpAt} ms`);
  assert.deepEqual(a.leads, [true, false]);
  assert.deepEqual([api.lease()?.holder, api.lease()?.transitions], ['b', 1]);

  // Back in touch, a follows b.
  cut = false;
  await pass(clock, 5_000);
  assert.deepEqual([a.election.leading, b.election.leading], [false, true]);
});

test("a leader's close releases the Lease: another leads within a round", async () => {
  const clock = new VirtualClock();
  const api = memoryLease();
  const a = gateway('a', api.view(), clock);
  const b = gateway('b', api.view(), clock);
  await aLeadsB(clock, a, b, 5_000);
  const closed = a.election.close();
  await pass(clock, 100);
  await closed;
  assert.equal(api.lease()?.holder, '');
  const at = clock.now();
  let upAfter: number | undefined;
  await pass(clock, 5_000, () => {
    if (b.election.leading) upAfter ??= clock.now() - at;
  });
  assert.ok(upAfter !== undefined && upAfter <= 2_100, `b led ${upAfter} ms after the release`);
});

test('of three that find the Lease expired, one takes it; a poke writes the word at once', async () => {
  const clock = new VirtualClock();
  const api = memoryLease();
  let word: PoolWord = { replicas: 2, draining: [] };
  let gone = false;
  const a = gateway(
    'a',
    api.view(() => gone),
    clock,
    () => word,
  );
  a.election.start();
  await pass(clock, 1_000);
  gone = true;
  const others = ['b', 'c', 'd'].map((n) => gateway(n, api.view(), clock, () => word));
  for (const g of others) g.election.start();
  await pass(clock, 20_000);
  assert.deepEqual(
    others.map((g) => g.election.leading).filter(Boolean),
    [true],
    'exactly one leads',
  );
  const leader = others.find((g) => g.election.leading);
  const writes = api.writes.length;
  word = { replicas: 2, draining: [1] };
  leader?.election.poke();
  await pass(clock, 50);
  assert.equal(api.writes.length, writes + 1);
  assert.deepEqual(api.lease()?.pool, word);
  await pass(clock, 2_100);
  for (const g of others.filter((x) => x !== leader)) assert.deepEqual(g.heard.at(-1), word);
});

test("an operator's freeze asked of a follower is written on the Lease: the leader holds it, and the next one", async () => {
  const clock = new VirtualClock();
  const api = memoryLease();
  const a = gateway('a', api.view(), clock);
  const b = gateway('b', api.view(), clock);
  await aLeadsB(clock, a, b, 3_000);
  assert.deepEqual([a.election.frozen, b.election.frozen], [false, false]);
  b.election.freeze(true);
  assert.equal(b.election.frozen, true, 'at once where it was asked');
  await pass(clock, 2_100);
  assert.deepEqual([api.lease()?.frozen, api.lease()?.holder], [true, 'a']);
  assert.equal(a.election.frozen, true, 'the leader reads it at its next renewal');
  // The leader goes; the next one is frozen too, until thawed (through the new leader here).
  await a.election.close();
  await pass(clock, 2_100);
  assert.deepEqual([b.election.leading, b.election.frozen], [true, true]);
  b.election.freeze(false);
  await pass(clock, 100);
  assert.equal(api.lease()?.frozen, false);
});

test('a leader closing over a Lease another wrote since (a freeze) still releases it', async () => {
  const clock = new VirtualClock();
  const api = memoryLease();
  const a = gateway('a', api.view(), clock);
  const b = gateway('b', api.view(), clock);
  await aLeadsB(clock, a, b, 3_000);
  b.election.freeze(true);
  await pass(clock, 50);
  assert.equal(api.lease()?.frozen, true, "b wrote over a's record");
  await a.election.close();
  assert.deepEqual([api.lease()?.holder, api.lease()?.frozen], ['', true]);
});
