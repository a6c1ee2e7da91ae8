import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRng } from '../../runtime/seeded-rng.ts';
import { RollingCounts, bucketing } from './rolling-counts.ts';

const S = 1_000;
const MIN = 60 * S;
const H = 60 * MIN;
const D = 24 * H;

test('a window is at most 1,440 buckets of at least a second', () => {
  const table: Array<[number, number, number]> = [
    // window, bucket width, buckets
    [S, S, 1],
    [90 * S, S, 90],
    [5 * MIN, S, 300],
    [H, 2_500, 1_440],
    [7 * D, 7 * MIN, 1_440],
    [28 * D, 28 * MIN, 1_440],
  ];
  for (const [window, width, count] of table) {
    assert.deepEqual(bucketing(window), { widthMs: width, count }, `window ${window}`);
  }
});

test('the oldest bucket leaves the window whole when a new one starts', () => {
  const c = new RollingCounts(H); // 2.5 s buckets
  c.add(0, 1, 0);
  c.add(30 * MIN, 0, 1);
  const table: Array<[number, number, number]> = [
    // read at, good, bad
    [30 * MIN, 1, 1],
    [H - 1, 1, 1], // bucket 0 is still the oldest of 1,440
    [H, 0, 1], // bucket 1,440 began: bucket 0 left
    [H + 30 * MIN - 1, 0, 1],
    [H + 30 * MIN, 0, 0],
    [10 * D, 0, 0],
  ];
  for (const [at, good, bad] of table) assert.deepEqual(c.read(at), { good, bad }, `at ${at}`);
});

test('counts after a silence longer than the window start from nothing', () => {
  const c = new RollingCounts(5 * MIN);
  c.add(0, 3, 2);
  c.add(D, 1, 0);
  assert.deepEqual(c.read(D), { good: 1, bad: 0 });
});

test('a long random stream of events matches a recount of the buckets in the window', () => {
  const rng = new SeededRng(7);
  const window = H;
  const { widthMs, count } = bucketing(window);
  const c = new RollingCounts(window);
  const events: Array<[number, boolean]> = [];
  let t = 0;
  for (let i = 0; i < 20_000; i++) {
    // Mostly busy, sometimes quiet for longer than a bucket, now and then for most of the window.
    const r = rng.next();
    t += r < 0.98 ? rng.next() * 800 : r < 0.999 ? rng.next() * 60 * S : rng.next() * 50 * MIN;
    const bad = rng.next() < 0.1;
    c.add(t, bad ? 0 : 1, bad ? 1 : 0);
    events.push([t, bad]);
    if (i % 997 === 0) {
      const k = Math.floor(t / widthMs);
      const inWindow = events.filter(([at]) => Math.floor(at / widthMs) > k - count);
      const want = {
        good: inWindow.filter(([, b]) => !b).length,
        bad: inWindow.filter(([, b]) => b).length,
      };
      assert.deepEqual(c.read(t), want, `at ${t}`);
    }
  }
});
