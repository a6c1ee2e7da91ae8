import assert from 'node:assert/strict';
import { test } from 'node:test';
import { searchCapacity } from './capacity-search.ts';

/** A system whose attainment is 1 up to `knee` req/s per group and falls after it. */
const system = (knee: number) => async (rate: number) => ({
  ratePerGroup: rate,
  attainment: rate <= knee ? 1 : knee / rate,
  detail: {},
});
const opts = { target: 0.99, firstRate: 1, precision: 0.05, maxProbes: 30, minRate: 0.01 };

test('capacity search: doubles to a failure, then bisects to within the precision', async () => {
  const s = await searchCapacity(system(13.7), opts);
  assert.ok(s.ratePerGroup <= 13.7 / 0.99 && s.ratePerGroup >= 13.7 / 1.05, String(s.ratePerGroup));
  assert.ok(s.failedAt !== null && s.failedAt / s.ratePerGroup <= 1.05);
  assert.deepEqual(
    s.probes.slice(0, 5).map((p) => p.ratePerGroup),
    [1, 2, 4, 8, 16],
  );
  assert.ok(s.probes.every((p) => p.pass === p.attainment >= 0.99));
});

test('capacity search: halves down when the first rate already fails', async () => {
  const s = await searchCapacity(system(0.3), opts);
  assert.ok(s.ratePerGroup > 0.28 && s.ratePerGroup <= 0.31, String(s.ratePerGroup));
  assert.equal(s.probes[0].pass, false);
});

test('capacity search: a system that serves nothing has capacity 0', async () => {
  const s = await searchCapacity(
    async (r) => ({ ratePerGroup: r, attainment: 0, detail: {} }),
    opts,
  );
  assert.equal(s.ratePerGroup, 0);
  assert.ok(s.probes.at(-1)!.ratePerGroup >= 0.01);
});

test('capacity search: stops at maxProbes', async () => {
  const s = await searchCapacity(system(1e9), { ...opts, maxProbes: 6 });
  assert.equal(s.probes.length, 6);
  assert.equal(s.failedAt, null);
});
