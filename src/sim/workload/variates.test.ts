import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRng } from '../../runtime/seeded-rng.ts';
import { exponentialSampler, gammaSampler, normalSampler, type Sampler } from './variates.ts';
import { mean, near, variance } from './test-stats.ts';

const N = 200_000;

function draw(sampler: Sampler, n = N): Float64Array {
  const xs = new Float64Array(n);
  for (let i = 0; i < n; i++) xs[i] = sampler();
  return xs;
}

test('normal has mean 0 and variance 1', () => {
  const xs = draw(normalSampler(new SeededRng(1)));
  assert.ok(Math.abs(mean(xs)) < 0.01, `mean ${mean(xs)}`);
  assert.ok(near(variance(xs), 1, 0.02), `variance ${variance(xs)}`);
});

test('exponential has the requested mean and is never negative', () => {
  const xs = draw(exponentialSampler(new SeededRng(2), 250));
  assert.ok(near(mean(xs), 250, 0.02), `mean ${mean(xs)}`);
  assert.ok(near(variance(xs), 250 * 250, 0.04));
  assert.ok(xs.every((x) => x >= 0));
});

for (const shape of [0.1, 0.3, 0.5, 1, 1.5, 2.5, 10, 100]) {
  test(`gamma(shape ${shape}) has mean k·θ and variance k·θ²`, () => {
    const scale = 3;
    const xs = draw(gammaSampler(new SeededRng(3, String(shape)), shape, scale));
    assert.ok(xs.every((x) => x >= 0 && Number.isFinite(x)));
    assert.ok(near(mean(xs), shape * scale, 0.02), `mean ${mean(xs)}`);
    // The sample variance of a small-shape gamma is noisy (excess kurtosis 6/k).
    const tol = shape < 0.5 ? 0.12 : 0.05;
    assert.ok(near(variance(xs), shape * scale * scale, tol), `variance ${variance(xs)}`);
  });
}

test('gamma rejects a shape that is not a positive finite number', () => {
  for (const shape of [0, -1, NaN, Infinity]) {
    assert.throws(() => gammaSampler(new SeededRng(1), shape, 1), RangeError);
  }
});

test('gamma with an integer shape follows the Erlang CDF', () => {
  for (const k of [2, 3]) {
    const xs = draw(gammaSampler(new SeededRng(4, String(k)), k, 1));
    for (const x of [0.5, 1, 2, 4]) {
      let term = 1;
      let sum = 0;
      for (let j = 0; j < k; j++) {
        sum += term;
        term *= x / (j + 1);
      }
      const expected = 1 - Math.exp(-x) * sum;
      const observed = xs.filter((v) => v < x).length / xs.length;
      assert.ok(Math.abs(observed - expected) < 0.005, `k=${k} x=${x}: ${observed} vs ${expected}`);
    }
  }
});
