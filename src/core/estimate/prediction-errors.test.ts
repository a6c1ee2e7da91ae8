import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PredictionErrors } from './prediction-errors.ts';

test('an empty tracker reports zeros, never NaN', () => {
  const s = new PredictionErrors().summary();
  assert.deepEqual(s, {
    output: { samples: 0, over_p90_rate: 0 },
    ttft: {
      samples: 0,
      under_predicted_rate: 0,
      error_ms: { p50: 0, p90: 0, p99: 0, mean: 0 },
      abs_error_ms_p50: 0,
    },
  });
  assert.doesNotMatch(JSON.stringify(s), /null|NaN/);
});

test('counts outputs strictly above the predicted p90', () => {
  const e = new PredictionErrors();
  e.recordOutput(100, 50);
  e.recordOutput(100, 100); // at p90 is not over
  e.recordOutput(100, 101);
  assert.deepEqual(e.summary().output, { samples: 3, over_p90_rate: 0.333333 });
});

test('summarises TTFT errors as actual − predicted with numpy-linear percentiles', () => {
  const e = new PredictionErrors();
  // Errors: −30, −10, 0, 20, 100.
  for (const [predicted, actual] of [
    [130, 100],
    [60, 50],
    [40, 40],
    [80, 100],
    [100, 200],
  ]) {
    e.recordTtft(predicted, actual);
  }
  assert.deepEqual(e.summary().ttft, {
    samples: 5,
    under_predicted_rate: 0.4,
    error_ms: { p50: 0, p90: 68, p99: 96.8, mean: 16 },
    // |errors| sorted: 0, 10, 20, 30, 100.
    abs_error_ms_p50: 20,
  });
});

test('rounds to 1e-3 ms and 1e-6 rates, without negative zero', () => {
  const e = new PredictionErrors();
  e.recordTtft(10, 9.9996);
  e.recordTtft(10, 9.9997); // p50 error −0.0003 rounds to −0
  e.recordTtft(10, 11.23456);
  const t = e.summary().ttft;
  assert.equal(t.error_ms.p50, 0);
  assert.ok(Object.is(t.error_ms.p50, 0));
  assert.equal(t.error_ms.p90, 0.988);
  assert.equal(t.under_predicted_rate, 0.333333);
});

test('rejects non-finite inputs', () => {
  const e = new PredictionErrors();
  assert.throws(() => e.recordOutput(NaN, 1), RangeError);
  assert.throws(() => e.recordTtft(1, Infinity), RangeError);
});
