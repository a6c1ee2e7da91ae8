// Replica groups in the simulated fleet: a started group serves only once ready; a drained one
// takes no new request and is removed — its GPUs released — when its last request ends; a group
// still starting is cancelled at once; GPU time counts from request to removal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Fleet } from './fleet.ts';
import { RequestTracker } from './request-tracker.ts';
import { TokenClock } from './token-clock.ts';
import { VirtualClock } from '../runtime/virtual-clock.ts';
import { SeededRng } from '../runtime/seeded-rng.ts';
import { constProfile, testConfig } from '../engine/engine-test-kit.ts';
import type { EngineListener } from '../engine/engine-types.ts';

function fleet() {
  const clock = new VirtualClock();
  const events: string[] = [];
  const listener: EngineListener<RequestTracker> = {
    onPrefillStart() {},
    onFirstToken() {},
    onToken() {},
    onFinish: (t) => {
      events.push(`${clock.now()} finish ${t.id}`);
      f.release(t.replica);
    },
    onPreempt() {},
    onFail() {},
  };
  const f = new Fleet(1, testConfig(), constProfile(10), listener, clock, undefined, {
    readyTime: { minMs: 60_000, maxMs: 60_000 },
    rng: new SeededRng(1),
    onReady: (i) => events.push(`${clock.now()} ready ${i}`),
    onRemoved: (i) => events.push(`${clock.now()} removed ${i}`),
  });
  const times = new TokenClock();
  const send = (id: string, replica: number, output = 5) => {
    const t = new RequestTracker(
      {
        id,
        arrivalMs: clock.now(),
        inputTokens: 16,
        outputTokens: output,
        tenant: 't',
        sloClass: 'interactive',
      },
      times,
      false,
    );
    t.replica = replica;
    f.dispatch(t);
  };
  return { clock, f, events, send };
}

test('a started group serves only after its ready time', () => {
  const { clock, f, events } = fleet();
  const g = f.start();
  assert.deepEqual(
    f.snapshots().map((x) => x.index),
    [0],
  );
  clock.run(59_999);
  assert.equal(f.count('starting'), 1);
  clock.run(60_000);
  assert.deepEqual(events, ['60000 ready 1']);
  assert.deepEqual(
    f.snapshots().map((x) => x.index),
    [0, g],
  );
});

test('a drained group finishes what it runs, then is removed; GPU time counts until then', () => {
  const { clock, f, events, send } = fleet();
  send('a', 0, 20);
  clock.run(50);
  f.drain(0);
  assert.equal(f.snapshots().length, 0, 'no new work goes there');
  assert.equal(f.count('draining'), 1);
  clock.run(Infinity);
  assert.deepEqual(events.slice(-2), ['200 finish a', '200 removed 0']);
  assert.equal(f.count('removed'), 1);
  assert.deepEqual(f.replicaTime(1_000), { heldMs: 200, readyMs: 50 });
});

test('a group still starting is cancelled at once, never ready', () => {
  const { clock, f, events } = fleet();
  const g = f.start();
  clock.run(10_000);
  f.drain(g);
  clock.run(Infinity);
  assert.equal(f.count('removed'), 1);
  assert.ok(!events.some((e) => e.includes('ready')));
  assert.equal(f.replicaTime(100_000).heldMs, 100_000 + 10_000);
});
