import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LocalEnginePool } from './local-pool.ts';
import { memoryOpsLog } from './ops-log.ts';
import { VirtualClock } from '../runtime/virtual-clock.ts';
import { SeededRng } from '../runtime/seeded-rng.ts';

test('an engine not ready well past its ready time is killed, and the next decision starts another', async () => {
  const clock = new VirtualClock();
  const advanceTo = (ms: number) => {
    clock.at(ms, () => {});
    clock.run(ms);
  };
  const log = memoryOpsLog();
  // An "engine" that never listens: a process that only waits, as one hung loading.
  const pool = await LocalEnginePool.open({
    slots: 2,
    command: [process.execPath, '-e', 'setInterval(() => {}, 60_000)'],
    engineArgs: [],
    readyTime: { minMs: 1_000, maxMs: 1_000 },
    rng: new SeededRng(1),
    maxDrainMs: 1_000,
    clock,
    timers: clock,
    log,
  });
  pool.attach({
    isReady: () => false,
    setDraining: () => {},
    inFlightOn: () => 0,
    reportedOn: () => undefined,
    running: () => {},
  });
  try {
    pool.apply(1);
    assert.equal(pool.count('starting'), 1);
    // Twice its ready time and the grace: still starting; past it, given up.
    advanceTo(2 * 1_000 + 30_000);
    assert.equal(pool.count('starting'), 1);
    advanceTo(2 * 1_000 + 30_001);
    assert.equal(pool.count('starting'), 0);
    assert.ok(log.lines.some((l) => l.level === 'warn' && /not ready in time/.test(l.msg)));
    pool.apply(1);
    assert.equal(pool.count('starting'), 1);
    assert.equal(pool.started, 2);
  } finally {
    await pool.close();
  }
});
