import { test } from 'node:test';
import assert from 'node:assert/strict';
import { VirtualClock } from './virtual-clock.ts';

test('time moves to each event fired, in order; a cancelled timer moves none', () => {
  const clock = new VirtualClock();
  const fired: number[] = [];
  clock.at(20, () => fired.push(clock.now()));
  // A deadline an hour away, cancelled before it is due: the run ends at the last real event.
  const deadline = clock.at(3_600_000, () => fired.push(clock.now()));
  clock.at(10, () => fired.push(clock.now()));
  clock.at(30, () => deadline.cancel());
  clock.run();
  assert.deepEqual(fired, [10, 20]);
  assert.equal(clock.now(), 30);
  assert.equal(clock.events, 3);
});

test('run stops at `untilMs`, with the clock there', () => {
  const clock = new VirtualClock();
  const fired: number[] = [];
  for (const at of [5, 15, 25]) clock.at(at, () => fired.push(at));
  clock.run(20);
  assert.deepEqual(fired, [5, 15]);
  assert.equal(clock.now(), 20);
});
