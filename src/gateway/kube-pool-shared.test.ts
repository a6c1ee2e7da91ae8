// Two gateways on one Kubernetes object, on a virtual clock: they elect one on a Lease; the
// leader's drain reaches the other, which routes nothing new to the draining replica; the
// replicas are lowered only once the replica itself reports none of anyone's requests (the
// follower's streams included); and when the leader goes mid-drain, the other takes the lead,
// reads the object again, and finishes the drain it was told of.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { VirtualClock } from '../runtime/virtual-clock.ts';
import { KubernetesPool } from './kube-pool.ts';
import type { Scale } from './kube-api.ts';
import { memoryLease, passInSteps as pass } from './memory-lease.ts';
import { memoryOpsLog } from './ops-log.ts';

function cluster(initial: number) {
  const clock = new VirtualClock();
  let replicas = initial;
  const patches: number[] = [];
  const scale = {
    get: async (): Promise<Scale> => ({ spec: replicas, status: replicas }),
    set: async (n: number): Promise<Scale> => {
      patches.push(n);
      replicas = n;
      return { spec: n, status: n };
    },
  };
  /** What each replica reports running and waiting (every gateway's), taken now. */
  const busy = new Map<number, number>();
  return { clock, scale, patches, busy, lease: memoryLease(), replicas: () => replicas };
}

/** One gateway: its pool, and its own view of the backends (its streams, its routing). */
async function gateway(c: ReturnType<typeof cluster>, name: string) {
  const streams = new Map<number, number>();
  const draining = new Set<number>();
  const fleet = {
    isReady: (i: number) => i < c.replicas(),
    setDraining: (i: number, on: boolean) => void (on ? draining.add(i) : draining.delete(i)),
    inFlightOn: (i: number) => streams.get(i) ?? 0,
    reportedOn: (i: number) => ({ busy: c.busy.get(i) ?? 0, atMs: c.clock.now() }),
    running: () => {},
  };
  const log = memoryOpsLog();
  const pool = await KubernetesPool.open({
    slots: 4,
    backendUrl: 'http://vllm-{i}:8000',
    scale: c.scale,
    maxDrainMs: 120_000,
    clock: c.clock,
    timers: c.clock,
    log,
    election: { lease: c.lease.view(), identity: name, epochMs: () => c.clock.now() },
  });
  pool.attach(fleet);
  return { pool, streams, draining, log };
}

test("the leader's drain reaches the follower and waits for its streams; the follower acts on nothing", async () => {
  const c = cluster(3);
  const a = await gateway(c, 'a');
  await pass(c.clock, 100);
  const b = await gateway(c, 'b');
  await pass(c.clock, 3_000);
  assert.deepEqual([a.pool.leading, b.pool.leading], [true, false]);

  b.pool.apply(1);
  await pass(c.clock, 3_000);
  assert.deepEqual([c.patches, [...b.draining]], [[], []], 'a follower neither patches nor drains');

  // a drains replica 2: b is told within a round, while b's two streams on it go on.
  c.busy.set(2, 2);
  b.streams.set(2, 2);
  a.pool.apply(2);
  assert.deepEqual([...a.draining], [2]);
  await pass(c.clock, 2_100);
  assert.deepEqual([...b.draining], [2], 'the follower routes nothing new to it');
  assert.equal(b.pool.count('draining'), 1);
  await pass(c.clock, 20_000);
  assert.deepEqual(c.patches, [], "not lowered while the replica runs b's streams");

  c.busy.set(2, 0);
  b.streams.set(2, 0);
  await pass(c.clock, 1_000);
  assert.deepEqual([c.patches, a.pool.cut], [[2], 0], 'lowered once the replica reports none');
  await pass(c.clock, 2_100);
  assert.deepEqual([[...b.draining], b.pool.count('ready')], [[], 2]);
});

test('the leader goes mid-drain: the other leads, reads the object, and finishes the drain', async () => {
  const c = cluster(3);
  const a = await gateway(c, 'a');
  await pass(c.clock, 100);
  const b = await gateway(c, 'b');
  await pass(c.clock, 3_000);
  c.busy.set(2, 1);
  a.pool.apply(2);
  await pass(c.clock, 2_100);
  assert.deepEqual([...b.draining], [2]);

  await a.pool.close();
  await pass(c.clock, 2_100);
  assert.equal(b.pool.leading, true);
  assert.deepEqual([...b.draining], [2], 'the drain goes on under the new leader');
  assert.ok(b.log.lines.some((l) => /going on with http:\/\/vllm-2:8000/.test(l.msg)));
  assert.deepEqual(c.patches, []);
  c.busy.set(2, 0);
  await pass(c.clock, 1_000);
  assert.deepEqual([c.patches, c.replicas()], [[2], 2]);
  b.pool.apply(3);
  await pass(c.clock, 100);
  assert.deepEqual(c.patches, [2, 3], 'the new leader acts on its decisions');
  await b.pool.close();
});
