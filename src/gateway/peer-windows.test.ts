// The replicas' autoscaling ticks through a shared store: each replica reads the others' (not
// its own), a tick that is not one (another version's) is left out, a replica gone drops out
// after three ticks, and a store that cannot be reached leaves each on its own, said once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { VirtualClock } from '../runtime/virtual-clock.ts';
import { MemoryStore } from './shared/memory-store.ts';
import { PeerWindows, type PeerShare } from './peer-windows.ts';
import { memoryOpsLog } from './ops-log.ts';

const tick = (arrivalRps: number): PeerShare => ({
  arrivalRps,
  goodRps: arrivalRps,
  missedRps: 0,
  mixArrivals: 10,
  mixInput: 1_000,
  mixCompletions: 10,
  mixOutput: 2_000,
  queued: 1,
});

const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

test("each replica hears the others' latest ticks, not its own; one gone drops out", async () => {
  const clock = new VirtualClock();
  const store = new MemoryStore({ clock });
  const log = memoryOpsLog();
  const [a, b, c] = ['a', 'b', 'c'].map(
    (replica) => new PeerWindows({ store, replica, tickMs: 5_000, log }),
  );
  a.post(tick(1));
  b.post(tick(2));
  await settle();
  await store.postWindow('d', '{"arrivalRps":"many"}', 15_000);
  c.post(tick(3));
  await settle();
  assert.deepEqual(
    c
      .others()
      .map((o) => o.arrivalRps)
      .sort(),
    [1, 2],
    "a's and b's; d's is not a tick",
  );
  clock.at(10_000, () => {});
  clock.run(10_000);
  b.post(tick(4));
  c.post(tick(5));
  await settle();
  clock.at(16_000, () => {});
  clock.run(16_000);
  b.post(tick(6));
  await settle();
  assert.deepEqual(
    b.others().map((o) => o.arrivalRps),
    [5],
    'a has not posted for three ticks',
  );
  assert.equal(log.lines.length, 0);
});

test('a store that cannot be reached leaves the replica on its own, said once', async () => {
  const clock = new VirtualClock();
  const store = new MemoryStore({ clock });
  const log = memoryOpsLog();
  const a = new PeerWindows({ store, replica: 'a', tickMs: 5_000, log });
  await store.postWindow('b', JSON.stringify(tick(2)), 60_000);
  a.post(tick(1));
  await settle();
  assert.equal(a.others().length, 1);
  const windows = store.windows.bind(store);
  store.windows = async () => {
    throw new Error('connect ECONNREFUSED');
  };
  a.post(tick(1));
  await settle();
  a.post(tick(1));
  await settle();
  assert.deepEqual(a.others(), []);
  assert.deepEqual(
    log.lines.map((l) => l.msg),
    [
      "autoscaler: the other replicas' demand cannot be read (connect ECONNREFUSED); deciding on this replica's alone",
    ],
  );
  store.windows = windows;
  a.post(tick(1));
  await settle();
  assert.equal(a.others().length, 1);
  assert.equal(log.lines.at(-1)?.msg, 'autoscaler: the other replicas are heard again');
});
