import { test } from 'node:test';
import assert from 'node:assert/strict';
import { percentileSorted } from './percentile.ts';
import { SortedWindow } from './sorted-window.ts';

/** Tiny deterministic LCG (glibc constants), so the random sequences are the same every run. */
function lcg(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return x / 4294967296;
  };
}

const QS = [0, 1, 10, 25, 50, 75, 90, 99, 100];

function assertMatches(w: SortedWindow, expected: number[]): void {
  const sorted = [...expected].sort((a, b) => a - b);
  assert.equal(w.size, sorted.length);
  for (const q of QS) assert.equal(w.quantile(q), percentileSorted(sorted, q), `q=${q}`);
  // Ranks k/(n−1) read each element on its own, so the whole sorted order is checked.
  for (let k = 0; k < sorted.length; k++) {
    const q = sorted.length === 1 ? 50 : (100 * k) / (sorted.length - 1);
    assert.equal(w.quantile(q), percentileSorted(sorted, q));
  }
}

test('matches a brute-force sort of the last `capacity` values over random sequences', () => {
  for (const [seed, capacity, steps, distinct] of [
    [1, 1, 50, 10],
    [2, 7, 200, 5],
    [3, 16, 300, 1000],
    [4, 33, 500, 3],
    [5, 100, 400, 1e6],
  ]) {
    const rand = lcg(seed);
    const w = new SortedWindow(capacity);
    const all: number[] = [];
    for (let i = 0; i < steps; i++) {
      const v = Math.floor(rand() * distinct) - distinct / 4;
      w.add(v);
      all.push(v);
      assertMatches(w, all.slice(-capacity));
    }
  }
});

test('evicts the oldest value, not the smallest or largest', () => {
  const w = new SortedWindow(3);
  for (const v of [10, 1, 5]) w.add(v);
  assertMatches(w, [10, 1, 5]);
  w.add(3); // 10 leaves
  assertMatches(w, [1, 5, 3]);
  assert.equal(w.quantile(100), 5);
  w.add(7); // 1 leaves
  assertMatches(w, [5, 3, 7]);
  assert.equal(w.quantile(0), 3);
});

test('handles duplicates, including evicting one copy of a repeated value', () => {
  const w = new SortedWindow(4);
  for (const v of [2, 2, 2, 9]) w.add(v);
  assertMatches(w, [2, 2, 2, 9]);
  w.add(1); // one 2 leaves
  assertMatches(w, [2, 2, 9, 1]);
  w.add(2); // another 2 leaves, a 2 arrives
  assertMatches(w, [2, 9, 1, 2]);
  w.add(9); // 2 leaves
  assertMatches(w, [9, 1, 2, 9]);
});

test('is NaN when empty and rejects NaN values and bad capacities', () => {
  const w = new SortedWindow(5);
  assert.equal(w.size, 0);
  assert.ok(Number.isNaN(w.quantile(50)));
  assert.throws(() => w.add(NaN), RangeError);
  assert.throws(() => new SortedWindow(0), RangeError);
  assert.throws(() => new SortedWindow(2.5), RangeError);
});

test('cdf is the fraction of values at or below x', () => {
  const w = new SortedWindow(4);
  assert.equal(w.cdf(5), 0);
  for (const v of [10, 20, 20, 40]) w.add(v);
  assert.deepEqual(
    [5, 10, 19, 20, 39, 40, 99].map((x) => w.cdf(x)),
    [0, 0.25, 0.25, 0.75, 0.75, 1, 1],
  );
  w.add(50); // evicts 10
  assert.equal(w.cdf(10), 0);
});
