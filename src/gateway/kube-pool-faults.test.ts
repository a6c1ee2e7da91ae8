// The Kubernetes actuator under what a cluster does to it, on a virtual clock: a gateway that
// starts beside replicas already serving leaves them to its autoscaler; a leader whose Lease
// rounds stall stops acting at its renew deadline; a count set above --max-replicas elsewhere is
// lowered; a replica that stops answering is not counted ready; and a patch refused with a
// Retry-After is not sent again before it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KubernetesPool } from './kube-pool.ts';
import { KubeError } from './kube-client.ts';
import { kubeCluster } from './kube-pool-test-kit.ts';
import { memoryLease, passInSteps as pass } from './memory-lease.ts';
import { memoryOpsLog } from './ops-log.ts';
import { startPool } from './scale-export.ts';
import type { LeaseStore } from './kube-lease.ts';

function open(c: ReturnType<typeof kubeCluster>, log = memoryOpsLog(), lease?: LeaseStore) {
  return KubernetesPool.open({
    slots: 3,
    backendUrl: 'http://vllm-{i}:8000',
    scale: c.scale,
    maxDrainMs: 60_000,
    clock: c.clock,
    timers: c.clock,
    log,
    ...(lease === undefined ? {} : { election: { lease, identity: 'a', epochMs: () => 0 } }),
  });
}

test('a gateway that starts beside three serving replicas drains none of them: --min-replicas is a floor', async () => {
  const c = kubeCluster(3);
  [0, 1, 2].forEach((i) => c.ready.add(i) && c.streams.set(i, 2));
  const log = memoryOpsLog();
  const pool = await open(c, log);
  startPool(pool, c.fleet, 1);
  await pass(c.clock, 5_000);
  assert.deepEqual([c.patches, [...c.draining]], [[], []]);
  assert.equal(pool.count('ready'), 3);
  assert.ok(!log.lines.some((l) => /draining/.test(l.msg)), 'no drain');
  // Below the floor it starts what is missing, as before.
  const few = kubeCluster(0);
  startPool(await open(few), few.fleet, 2);
  await pass(few.clock, 1);
  assert.deepEqual(few.patches, [2]);
});

test('a leader whose Lease rounds stall acts no more once its renew deadline has passed', async () => {
  const c = kubeCluster(1);
  c.ready.add(0);
  const store = memoryLease();
  let stalled = false;
  const view = store.view();
  const lease: LeaseStore = {
    ...view,
    // A process paused, or an answer that never ends: the round waits on it.
    get: () => (stalled ? new Promise(() => {}) : view.get()),
  };
  const pool = await open(c, memoryOpsLog(), lease);
  pool.attach(c.fleet);
  await pass(c.clock, 100);
  assert.equal(pool.leading, true);
  pool.apply(2);
  await pass(c.clock, 100);
  assert.deepEqual(c.patches, [2], 'leading, it acts');
  stalled = true;
  await pass(c.clock, 11_000);
  pool.apply(3);
  await pass(c.clock, 100);
  assert.deepEqual(c.patches, [2], 'not renewed for 11 s: another may lead by now');
});

test('a count set above --max-replicas elsewhere is lowered to it, not kept', async () => {
  const c = kubeCluster(2);
  c.ready.add(0).add(1);
  const log = memoryOpsLog();
  const pool = await open(c, log);
  pool.attach(c.fleet);
  pool.apply(2);
  await pass(c.clock, 1);
  c.scaleElsewhere(6);
  pool.apply(2);
  await pass(c.clock, 1);
  assert.ok(log.lines.some((l) => /has 6 replicas, more than --max-replicas/.test(l.msg)));
  pool.apply(2);
  await pass(c.clock, 1);
  assert.equal(c.replicas(), 3, 'the slots it has: then its own decisions');
});

test('a ready replica that stops answering is starting again: no capacity until it is back', async () => {
  const c = kubeCluster(2);
  c.ready.add(0).add(1);
  const log = memoryOpsLog();
  const pool = await open(c, log);
  pool.attach(c.fleet);
  assert.deepEqual([pool.count('ready'), pool.count('starting')], [2, 0]);
  c.ready.delete(0);
  assert.deepEqual([pool.count('ready'), pool.count('starting')], [1, 1]);
  assert.ok(log.lines.some((l) => /vllm-0:8000 is no longer ready/.test(l.msg)));
  c.ready.add(0);
  assert.deepEqual([pool.count('ready'), pool.count('starting')], [2, 0]);
});

test('a patch refused with a Retry-After is not sent again before it', async () => {
  const c = kubeCluster(1);
  c.ready.add(0);
  const log = memoryOpsLog();
  const pool = await open(c, log);
  pool.attach(c.fleet);
  c.refusePatches(new KubeError('PATCH …: HTTP 429 Too Many Requests', 429, 30_000));
  pool.apply(2);
  await pass(c.clock, 1);
  assert.ok(log.lines.some((l) => /failed \(sent again in 30 s, as asked\)/.test(l.msg)));
  c.refusePatches(undefined);
  for (let t = 0; t < 25; t++) {
    pool.apply(2);
    await pass(c.clock, 1_000);
  }
  assert.deepEqual(c.patches, [], 'quiet, as asked');
  await pass(c.clock, 6_000);
  pool.apply(2);
  await pass(c.clock, 1);
  assert.deepEqual(c.patches, [2]);
  assert.deepEqual(pool.resizes, { ok: 1, error: 1 });
});
