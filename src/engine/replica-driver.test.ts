import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Clock } from '../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import type { EngineRequest } from './engine-types.ts';
import { Recorder, constProfile, req, runLoop, testConfig } from './engine-test-kit.ts';
import { ReplicaCore } from './replica.ts';
import { ReplicaDriver } from './replica-driver.ts';

/** A minimal virtual clock: runs due timers in (time, sequence) order. */
class VirtualTime implements Clock, Timers {
  private t = 0;
  private seq = 0;
  private queue: { at: number; seq: number; fn: () => void; live: boolean }[] = [];
  now(): number {
    return this.t;
  }
  at(atMs: number, fn: () => void): TimerHandle {
    const item = { at: Math.max(atMs, this.t), seq: this.seq++, fn, live: true };
    this.queue.push(item);
    return { cancel: () => void (item.live = false) };
  }
  run(): void {
    while (this.queue.length > 0) {
      this.queue.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.queue.shift()!;
      this.t = next.at;
      if (next.live) next.fn();
    }
  }
}

test('the driver runs the core on timers exactly as a fake-step loop does', () => {
  const arrivals = [0, 5, 12, 40, 41, 300].map((at, i) => ({
    atMs: at,
    req: req(`r${i}`, 30 + 20 * i, 3 + i),
  }));
  const direct = new Recorder();
  runLoop(new ReplicaCore<EngineRequest>(testConfig(), constProfile(10), direct), arrivals);

  const time = new VirtualTime();
  const driven = new Recorder();
  const driver = new ReplicaDriver<EngineRequest>({
    config: testConfig(),
    profile: constProfile(10),
    listener: driven,
    clock: time,
    timers: time,
  });
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
  const time = new VirtualTime();
  const rec = new Recorder();
  const driver = new ReplicaDriver<EngineRequest>({
    config: testConfig(),
    profile: constProfile(10),
    listener: rec,
    clock: time,
    timers: time,
  });
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
  const time = new VirtualTime();
  const rec = new Recorder();
  const driver = new ReplicaDriver<EngineRequest>({
    config: testConfig(),
    profile: constProfile(10),
    listener: rec,
    clock: time,
    timers: time,
  });
  driver.add(req('a', 10, 5));
  driver.close();
  time.run();
  assert.deepEqual(rec.lines, ['0 prefill a']);
});
