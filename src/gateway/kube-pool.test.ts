// The Kubernetes actuator's rules on a virtual clock, against a scale subresource and a fleet
// that do as told: scale-out asks for replicas above the highest; scale-in drains the highest
// serving replica and lowers the replicas only once every replica above the new count has
// drained, so the replica the controller removes (the highest ordinal) is the drained one;
// scale-out takes back a drain first; a patch that fails is sent again at the next decision.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { VirtualClock } from '../runtime/virtual-clock.ts';
import { KubernetesPool } from './kube-pool.ts';
import { kubeCluster } from './kube-pool-test-kit.ts';
import { memoryOpsLog } from './ops-log.ts';

/** The pool of `slots` over `s`'s scale and clock. */
function open(
  s: ReturnType<typeof kubeCluster>,
  slots: number,
  backendUrl: string,
  maxDrainMs: number,
  log = memoryOpsLog(),
) {
  const o = { slots, backendUrl, scale: s.scale, maxDrainMs, clock: s.clock, timers: s.clock, log };
  return KubernetesPool.open(o);
}

/** Runs the clock `ms` on, and lets the patches' promises settle. */
async function pass(clock: VirtualClock, ms: number): Promise<void> {
  const until = clock.now() + ms;
  clock.at(until, () => {});
  clock.run(until);
  await new Promise((r) => setImmediate(r));
}

test('out above the highest, in from the highest once drained; the drained replica is the one removed', async () => {
  const s = kubeCluster(1);
  const log = memoryOpsLog();
  const pool = await open(s, 4, 'http://vllm-{i}.vllm.llm.svc:8000', 60_000, log);
  assert.deepEqual(
    pool.urls,
    [0, 1, 2, 3].map((i) => `http://vllm-${i}.vllm.llm.svc:8000`),
  );
  pool.attach(s.fleet);
  assert.equal(pool.count('starting'), 1, 'the replica there at start, not yet scraped');
  s.ready.add(0);
  assert.equal(pool.count('ready'), 1);

  pool.apply(3);
  await pass(s.clock, 0);
  assert.deepEqual(s.patches, [3]);
  assert.deepEqual([pool.count('ready'), pool.count('starting')], [1, 2]);
  s.ready.add(1).add(2);
  assert.equal(pool.count('ready'), 3);

  // In to 1: replicas 2 and 1 drain; 2 still streams, 1 does not.
  s.streams.set(2, 3);
  pool.apply(1);
  assert.deepEqual([...s.draining].sort(), [1, 2]);
  await pass(s.clock, 1_000);
  assert.deepEqual(s.patches, [3], 'not lowered while the top replica streams');
  s.streams.set(2, 0);
  await pass(s.clock, 1_000);
  assert.deepEqual(s.patches, [3, 1], 'both drained: the replicas lowered past them');
  assert.equal(pool.drained, 2);
  assert.equal(pool.cut, 0);

  // Out again: ordinals 1 and 2 come back, no longer draining.
  pool.apply(3);
  await pass(s.clock, 0);
  assert.deepEqual(s.patches, [3, 1, 3]);
  assert.deepEqual([...s.draining], []);
});

test('a scale-out takes back a drain before it asks for a replica', async () => {
  const s = kubeCluster(2);
  const pool = await open(s, 3, 'http://10.0.0.{i}:8000', 60_000);
  pool.attach(s.fleet);
  s.ready.add(0).add(1);
  s.streams.set(1, 1);
  pool.apply(1);
  assert.deepEqual([...s.draining], [1]);
  pool.apply(2);
  await pass(s.clock, 5_000);
  assert.deepEqual(s.patches, [], 'replica 1 serves again: nothing to ask for');
  assert.deepEqual([...s.draining], []);
  assert.equal(pool.count('ready'), 2);
});

test('a drain past its time is cut and counted; a patch that fails is sent again', async () => {
  const s = kubeCluster(2);
  s.refusePatches(new Error('HTTP 503 the API server is away'));
  const log = memoryOpsLog();
  const pool = await open(s, 2, 'http://vllm-{i}:8000', 2_000, log);
  pool.attach(s.fleet);
  s.ready.add(0).add(1);
  s.streams.set(1, 4);
  pool.apply(1);
  await pass(s.clock, 3_000);
  assert.equal(pool.cut, 4, 'cut at the drain time');
  assert.equal(s.replicas(), 2, 'the patch failed');
  assert.ok(log.lines.some((l) => /setting replicas to 1 failed/.test(l.msg)));
  s.refusePatches(undefined);
  pool.apply(1);
  await pass(s.clock, 0);
  assert.deepEqual([s.patches, s.replicas()], [[1], 1]);
  assert.deepEqual(
    pool.resizes,
    { ok: 1, error: 1 },
    'counted for goodput_engine_pool_resizes_total',
  );
});

test('a count set outside the gateway is taken as it is: replicas added are drained before they go', async () => {
  const s = kubeCluster(2);
  const log = memoryOpsLog();
  const pool = await open(s, 4, 'http://vllm-{i}:8000', 60_000, log);
  pool.attach(s.fleet);
  s.ready.add(0).add(1);
  pool.apply(2);
  await pass(s.clock, 0);
  assert.deepEqual(s.patches, [], 'as it is: nothing to set');

  s.scaleElsewhere(4);
  s.ready.add(2).add(3);
  pool.apply(2);
  await pass(s.clock, 0);
  assert.ok(log.lines.some((l) => /replicas were set to 4 outside the gateway/.test(l.msg)));
  assert.equal(pool.count('ready'), 4);
  s.streams.set(3, 1);
  pool.apply(2);
  assert.deepEqual([...s.draining].sort(), [2, 3], 'the two added drain first');
  await pass(s.clock, 1_000);
  assert.deepEqual(s.patches, [], 'not lowered while replica 3 streams');
  s.streams.set(3, 0);
  await pass(s.clock, 1_000);
  assert.deepEqual(s.patches, [2]);

  // Someone removes one: no longer counted, and the next decision asks for it again.
  s.scaleElsewhere(1);
  s.ready.delete(1);
  pool.apply(2);
  await pass(s.clock, 0);
  assert.equal(pool.count('ready') + pool.count('starting'), 1);
  pool.apply(2);
  await pass(s.clock, 0);
  assert.deepEqual(s.patches, [2, 2]);
});
