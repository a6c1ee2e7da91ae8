import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isConfigError } from '../../../core/errors.ts';
import { scaledArrival, selectWindow } from './trace-window.ts';

// Rows at 0, 1, 2, … 9 s.
const tMs = Float64Array.from({ length: 10 }, (_, i) => i * 1000);

test('no window keeps the whole trace on its own clock', () => {
  const w = selectWindow(tMs, 0, undefined);
  assert.deepEqual([w.from, w.to], [0, 10]);
  assert.equal(scaledArrival(tMs[9], w, 1), 9000);
});

test('a window [start, start + duration) is cut before scaling, then re-based to its start', () => {
  const w = selectWindow(tMs, 2.5, 4);
  // Rows at 3, 4, 5, 6 s lie in [2.5, 6.5).
  assert.deepEqual([w.from, w.to], [3, 7]);
  assert.equal(scaledArrival(tMs[3], w, 1), 500);
  assert.equal(scaledArrival(tMs[6], w, 1), 3500);
  // Twice the rate: the same rows, at half the times.
  assert.equal(scaledArrival(tMs[3], w, 2), 250);
  assert.equal(scaledArrival(tMs[6], w, 2), 1750);
  assert.equal(scaledArrival(tMs[6], w, 0.5), 7000);
});

test('the window start is inclusive and its end exclusive', () => {
  const w = selectWindow(tMs, 2, 3);
  assert.deepEqual([w.from, w.to], [2, 5]);
  assert.equal(scaledArrival(tMs[2], w, 1), 0);
});

test('a window past the end, or between rows, is a ConfigError naming the option', () => {
  assert.throws(
    () => selectWindow(tMs, 20, undefined),
    (e) => isConfigError(e) && e.path === '--start' && e.message.includes('0–9 s'),
  );
  assert.throws(
    () => selectWindow(tMs, 2.1, 0.5),
    (e) => isConfigError(e) && e.path === '--duration',
  );
});
