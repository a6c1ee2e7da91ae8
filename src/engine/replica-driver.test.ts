import { test } from 'node:test';
import assert from 'node:assert/strict';
import { VirtualClock } from '../runtime/virtual-clock.ts';
import type { EngineRequest } from './engine-types.ts';
import { Recorder, constProfile, req, runLoop, testConfig } from './engine-test-kit.ts';
import { ReplicaCore } from './replica.ts';
import { ReplicaDriver } from './replica-driver.ts';

/** A driver on a virtual clock, recording its events. */
function drivenReplica() {
  const time = new VirtualClock();
  const rec = new Recorder();
  const driver = new ReplicaDriver<EngineRequest>({
    config: testConfig(),
    profile: constProfile(10),
    listener: rec,
    clock: time,
    timers: time,
  });
  return { time, rec, driver };
}

test('the driver runs the core on timers exactly as a fake-step loop does', () => {
  const arrivals = [0, 5, 12, 40, 41, 300].map((at, i) => ({
    atMs: at,
    req: req(`r${i}`, 30 + 20 * i, 3 + i),
  }));
  const direct = new Recorder();
  runLoop(new ReplicaCore<EngineRequest>(testConfig(), constProfile(10), direct), arrivals);

  const { time, rec: driven, driver } = drivenReplica();
  for (const a of arrivals) time.at(a.atMs, () => driver.add(a.req));
  time.run();
  // (Distinct arrival times: with simultaneous ones the loop admits them all before planning,
  // while the driver starts a step on the first.)
  assert.deepEqual(driven.lines, direct.lines);
  assert.ok(driver.idle);
  assert.equal(driver.load().kvUsedBlocks, 0);
  assert.equal(driver.stats().finished, arrivals.length);
});

test('a listener that adds work from inside an event (a closed-loop client) never nests steps', () => {
  const { time, rec, driver } = drivenReplica();
  let sent = 0;
  const onFinish = rec.onFinish.bind(rec);
  rec.onFinish = (r, at) => {
    onFinish(r, at);
    if (sent < 20) driver.add(req(`c${sent++}`, 40, 4));
  };
  driver.add(req(`c${sent++}`, 40, 4));
  driver.add(req(`c${sent++}`, 40, 4));
  time.run();
  assert.equal(driver.stats().finished, 20);
  // Two streams of ten requests, each one prefill step and three decode steps, back to back;
  // the second stream starts a step late (c0's step was already running when c1 arrived).
  assert.equal(time.now(), 10 + 10 * 4 * 10);
  assert.ok(driver.idle);
});

test('close stops the replica: the pending step is never applied', () => {
  const { time, rec, driver } = drivenReplica();
  driver.add(req('a', 10, 5));
  time.run(0);
  driver.close();
  time.run();
  assert.deepEqual(rec.lines, ['0 prefill a']);
});

test('requests arriving at the same instant share the first step', () => {
  const { time, rec, driver } = drivenReplica();
  driver.add(req('a', 10, 5));
  driver.add(req('b', 10, 5));
  time.run(0);
  assert.deepEqual(rec.lines, ['0 prefill a', '0 prefill b']);
});
