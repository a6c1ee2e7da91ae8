import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRng } from '../../runtime/seeded-rng.ts';
import { arrivalClock, type ArrivalProcess } from './arrivals.ts';
import { cv, near } from './test-stats.ts';

const N = 200_000;

function arrivals(process: ArrivalProcess, seed = 7): Float64Array {
  const root = new SeededRng(seed);
  const next = arrivalClock(process, () => root.fork('arrivals'));
  const ts = new Float64Array(process.count);
  for (let i = 0; i < process.count; i++) ts[i] = next();
  return ts;
}

function gaps(ts: Float64Array): Float64Array {
  const g = new Float64Array(ts.length);
  for (let i = 0; i < ts.length; i++) g[i] = ts[i] - (i > 0 ? ts[i - 1] : 0);
  return g;
}

for (const burstiness of [0.25, 0.5, 1, 2, 4]) {
  test(`burstiness ${burstiness}: mean rate R and gap CV 1/√B over ${N} arrivals`, () => {
    const rate = 20;
    const ts = arrivals({ rateRps: rate, burstiness, count: N });
    for (let i = 1; i < N; i++) assert.ok(ts[i] >= ts[i - 1]);
    // As vLLM: the last arrival is rescaled to exactly N / R.
    assert.ok(near(ts[N - 1], (N / rate) * 1000, 1e-9), `last ${ts[N - 1]}`);
    assert.ok(near(cv(gaps(ts)), 1 / Math.sqrt(burstiness), 0.03), `cv ${cv(gaps(ts))}`);
    // The rescale factor is the ratio of the drawn total to N/R: close to 1 for many arrivals.
    assert.ok(ts[0] > 0 && ts[0] < 10_000);
  });
}

test('the first arrival is one gap after time 0, as in vLLM', () => {
  const ts = arrivals({ rateRps: 1, burstiness: 1, count: 3 });
  assert.ok(ts[0] > 0);
  assert.equal(ts[2], 3000);
});

test('a rescale leaves the windowed rate close to R in every tenth of the run', () => {
  const rate = 50;
  const ts = arrivals({ rateRps: rate, burstiness: 1, count: N });
  const span = ts[N - 1] / 10;
  for (let k = 0; k < 10; k++) {
    const inWindow = ts.filter((t) => t > k * span && t <= (k + 1) * span).length;
    assert.ok(near(inWindow / (span / 1000), rate, 0.03), `window ${k}: ${inWindow}`);
  }
});

test('Poisson (burstiness 1) is the same stream whichever way it is asked for', () => {
  const a = arrivals({ rateRps: 5, burstiness: 1, count: 1000 }, 3);
  const b = arrivals({ rateRps: 5, burstiness: 1, count: 1000 }, 3);
  assert.deepEqual(a, b);
  const c = arrivals({ rateRps: 5, burstiness: 1, count: 1000 }, 4);
  assert.notDeepEqual(a, c);
});

test('infinite rate sends everything at 0; infinite burstiness spaces arrivals evenly', () => {
  assert.deepEqual([...arrivals({ rateRps: Infinity, burstiness: 1, count: 4 })], [0, 0, 0, 0]);
  const even = arrivals({ rateRps: 4, burstiness: Infinity, count: 4 });
  assert.deepEqual([...even], [250, 500, 750, 1000]);
});
