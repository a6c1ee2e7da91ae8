import { test } from 'node:test';
import assert from 'node:assert/strict';
import { wallTimers } from './wall-timers.ts';

test('fires in time order, never synchronously, and cancels', async () => {
  let now = 0;
  const timers = wallTimers({ now: () => now });
  const seen: string[] = [];
  timers.at(-5, () => seen.push('past'));
  const cancelled = timers.at(0, () => seen.push('cancelled'));
  cancelled.cancel();
  assert.deepEqual(seen, [], 'nothing runs inside `at`');
  await new Promise<void>((resolve) => timers.at(1, resolve));
  now = 1;
  assert.deepEqual(seen, ['past']);
});

test('a time beyond what Node timers reach waits, instead of firing at once', async () => {
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.name);
  process.on('warning', onWarning);
  const timers = wallTimers({ now: () => 0 });
  let fired = false;
  const far = timers.at(2 ** 31 + 1_000, () => (fired = true));
  await new Promise((r) => setTimeout(r, 20));
  far.cancel();
  process.off('warning', onWarning);
  assert.equal(fired, false);
  assert.deepEqual(warnings, [], 'no TimeoutOverflowWarning');
});
