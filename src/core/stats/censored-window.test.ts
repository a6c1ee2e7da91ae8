import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CensoredWindow } from './censored-window.ts';
import { SortedWindow } from './sorted-window.ts';

test('with no bound in it, it is a SortedWindow, value for value', () => {
  const c = new CensoredWindow(8);
  const s = new SortedWindow(8);
  for (const v of [5, 1, 9, 9, 3, 12, 7, 2, 40, 6, 8]) {
    c.add(v);
    s.add(v);
    for (const q of [10, 50, 90]) assert.equal(c.quantile(q), s.quantile(q));
    for (const x of [0, 5, 9, 100]) assert.equal(c.cdf(x), s.cdf(x));
  }
});

test('outputs every one cut at its cap: the quantiles are the cap, not the prior nor lower', () => {
  const c = new CensoredWindow(16);
  for (let i = 0; i < 16; i++) c.add(256, true);
  assert.deepEqual(
    [10, 50, 90].map((q) => c.quantile(q)),
    [256, 256, 256],
  );
  assert.equal(c.cdf(255), 0);
});

test('low caps hit by some requests do not pull the lengths of the rest down', () => {
  const c = new CensoredWindow(32);
  for (let i = 0; i < 10; i++) c.add(16, true); // max_tokens 16, cut
  for (let i = 0; i < 10; i++) c.add(100);
  // The cut ones say only "at least 16": every true length seen is 100.
  assert.deepEqual(
    [10, 50, 90].map((q) => c.quantile(q)),
    [100, 100, 100],
  );
  assert.equal(c.cdf(50), 0);
  assert.equal(c.cdf(100), 1);
});

test('Kaplan–Meier by hand: a bound leaves the risk set after its value', () => {
  const c = new CensoredWindow(8);
  for (const v of [10, 20, 30, 40]) c.add(v);
  c.add(25, true);
  // At 10: 1 of 5 ends → F 0.2; at 20: 1 of 4 → S 0.6, F 0.4; the bound at 25 leaves; at 30:
  // 1 of 2 → S 0.3, F 0.7; at 40: 1 of 1 → F 1.
  assert.deepEqual(
    [20, 40, 50, 70, 71, 100].map((q) => c.quantile(q)),
    [10, 20, 30, 30, 40, 40],
  );
  assert.ok(Math.abs(c.cdf(35) - 0.7) < 1e-12);
});

test('bounds leave the window in arrival order, like the values', () => {
  const c = new CensoredWindow(4);
  c.add(500, true);
  c.add(10);
  c.add(20);
  c.add(30);
  // A quarter of the mass lies beyond the cut at 500: p90 is at least that.
  assert.equal(c.quantile(50), 20);
  assert.equal(c.quantile(90), 500);
  c.add(40); // the bound leaves: 10, 20, 30, 40, all true, interpolated as numpy does
  assert.equal(c.quantile(90), 37);
});
