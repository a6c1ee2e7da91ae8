import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  boundedRetryMs,
  fullBucket,
  giveBack,
  msUntil,
  refill,
  take,
  type TokenBucket,
} from './token-bucket.ts';

// 1000 per 10 s window: 0.1 per ms.
const CAP = 1000;
const RATE = 0.1;

test('refill adds rate × elapsed, clamps at capacity and ignores a clock stepping back', () => {
  const cases: { name: string; bucket: TokenBucket; nowMs: number; level: number }[] = [
    { name: 'no time passed', bucket: { level: 100, updatedMs: 0 }, nowMs: 0, level: 100 },
    { name: 'partial refill', bucket: { level: 100, updatedMs: 0 }, nowMs: 1000, level: 200 },
    { name: 'clamped at capacity', bucket: { level: 900, updatedMs: 0 }, nowMs: 5000, level: 1000 },
    { name: 'debt repaid first', bucket: { level: -500, updatedMs: 0 }, nowMs: 5000, level: 0 },
    { name: 'clock stepped back', bucket: { level: 100, updatedMs: 500 }, nowMs: 0, level: 100 },
    { name: 'quota lowered', bucket: { level: 5000, updatedMs: 0 }, nowMs: 0, level: 1000 },
  ];
  for (const c of cases) {
    const before = structuredClone(c.bucket);
    assert.equal(refill(c.bucket, CAP, RATE, c.nowMs).level, c.level, c.name);
    assert.deepEqual(c.bucket, before, `${c.name}: argument untouched`);
  }
});

test('take may leave debt; giveBack never exceeds capacity', () => {
  const b = take(fullBucket(CAP, 0), 1500, CAP, RATE, 0);
  assert.deepEqual(b, { level: -500, updatedMs: 0 });
  assert.equal(refill(b, CAP, RATE, 2000).level, -300);
  assert.equal(giveBack(b, 700, CAP, RATE, 0).level, 200);
  assert.equal(giveBack(fullBucket(CAP, 0), 700, CAP, RATE, 0).level, CAP);
});

test('msUntil: 0 when enough, exact wait otherwise, Infinity beyond capacity', () => {
  const half: TokenBucket = { level: 500, updatedMs: 0 };
  const cases: { bucket: TokenBucket; amount: number; nowMs: number; wait: number }[] = [
    { bucket: half, amount: 400, nowMs: 0, wait: 0 },
    { bucket: half, amount: 500, nowMs: 0, wait: 0 },
    { bucket: half, amount: 600, nowMs: 0, wait: 1000 },
    { bucket: half, amount: 600, nowMs: 400, wait: 600 },
    { bucket: half, amount: 1000, nowMs: 0, wait: 5000 },
    { bucket: half, amount: 1001, nowMs: 0, wait: Infinity },
    { bucket: { level: -1000, updatedMs: 0 }, amount: 500, nowMs: 0, wait: 15000 },
  ];
  for (const c of cases) {
    assert.equal(msUntil(c.bucket, c.amount, CAP, RATE, c.nowMs), c.wait, JSON.stringify(c));
  }
  assert.equal(msUntil(half, 600, CAP, 0, 0), Infinity, 'a bucket that never refills');
});

test('msUntil never shrinks as the amount grows', () => {
  const b: TokenBucket = { level: -200, updatedMs: 0 };
  let last = -1;
  for (const amount of [0, 1, 10, 100, 500, 999, 1000, 1001, 10_000]) {
    const wait = msUntil(b, amount, CAP, RATE, 0);
    assert.ok(wait >= last, `amount ${amount}: ${wait} < ${last}`);
    last = wait;
  }
});

test('boundedRetryMs: whole ms in [1, cap], Infinity becomes the cap', () => {
  const cases: [number, number][] = [
    [0, 1],
    [0.2, 1],
    [1500.3, 1501],
    [60_000, 60_000],
    [60_001, 60_000],
    [Infinity, 60_000],
  ];
  for (const [wait, retry] of cases) assert.equal(boundedRetryMs(wait, 60_000), retry, `${wait}`);
});
