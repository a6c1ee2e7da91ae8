// Tests for WaitCalibration (wait-calibration.ts): ratios learned per class and prompt size.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MIN_MODELLED_WAIT_MS, WaitCalibration } from './wait-calibration.ts';

const params = { window: 8, minSamples: 4, sureQuantile: 90 };

test('wait calibration: an unseen class or bucket leaves the model as it is', () => {
  const c = new WaitCalibration(params);
  assert.equal(c.factor('interactive', 1_000), 1);
  assert.equal(c.sureFactor('interactive', 1_000), 1);
  c.observe('interactive', 1_000, 100, 300);
  assert.equal(c.factor('batch', 1_000), 1, 'another class');
  assert.equal(c.factor('interactive', 4_000), 1, 'another bucket');
});

test('wait calibration: the median ratio, and a higher percentile for the sure wait', () => {
  const c = new WaitCalibration(params);
  for (const actual of [50, 100, 100, 200, 400]) c.observe('interactive', 1_000, 100, actual);
  assert.equal(c.factor('interactive', 1_000), 1);
  // numpy-linear p90 of [0.5, 1, 1, 2, 4]: 2 + 0.6 × 2.
  assert.equal(c.sureFactor('interactive', 1_000), 3.2);
});

test('wait calibration: half-octave buckets — 1,448 and 1,449 tokens learn apart, 1,100 and 1,400 together', () => {
  const c = new WaitCalibration(params);
  for (let i = 0; i < 4; i++) c.observe('interactive', 1_449, 100, 500);
  assert.equal(c.factor('interactive', 2_047), 5);
  assert.equal(c.factor('interactive', 1_448), 1);
  for (let i = 0; i < 4; i++) c.observe('interactive', 1_100, 100, 50);
  assert.equal(c.factor('interactive', 1_400), 0.5);
  assert.equal(c.factor('interactive', 1_024), 0.5);
  assert.equal(c.factor('interactive', 1_023), 1);
});

test('wait calibration: until a bucket has enough samples it may only raise the wait', () => {
  const c = new WaitCalibration(params);
  for (let i = 0; i < 3; i++) c.observe('interactive', 1_000, 100, 20);
  assert.equal(c.factor('interactive', 1_000), 1, 'three samples of 0.2: not trusted to lower it');
  c.observe('interactive', 1_000, 100, 20);
  assert.equal(c.factor('interactive', 1_000), 0.2, 'the fourth makes the bucket trusted');
  const d = new WaitCalibration(params);
  d.observe('interactive', 1_000, 100, 1_500);
  assert.equal(d.factor('interactive', 1_000), 15, 'one long wait is heeded at once');
});

test('wait calibration: the least factor of any prompt up to a size — never above 1, a bucket past it left out', () => {
  const c = new WaitCalibration(params);
  assert.equal(c.leastFactor('interactive', 10_000), 1, 'nothing learned');
  for (let i = 0; i < 4; i++) c.observe('interactive', 1_100, 100, 300);
  assert.equal(c.leastFactor('interactive', 10_000), 1, 'a slower bucket does not raise it');
  for (let i = 0; i < 4; i++) c.observe('interactive', 3_000, 100, 40);
  for (let i = 0; i < 3; i++) c.observe('interactive', 200, 100, 10);
  assert.equal(c.leastFactor('interactive', 10_000), 0.4, 'the least trusted bucket');
  assert.equal(c.leastFactor('interactive', 2_047), 1, 'the 3,000-token bucket lies past 2,047');
  c.observe('interactive', 200, 100, 10);
  assert.equal(c.leastFactor('interactive', 2_047), 0.1, 'once the 200-token bucket is trusted');
  assert.equal(c.leastFactor('batch', 10_000), 1, 'another class');
});

test('wait calibration: a window of recent waits — old ones leave', () => {
  const c = new WaitCalibration(params);
  for (let i = 0; i < 8; i++) c.observe('interactive', 1_000, 100, 300);
  assert.equal(c.factor('interactive', 1_000), 3);
  for (let i = 0; i < 8; i++) c.observe('interactive', 1_000, 100, 100);
  assert.equal(c.factor('interactive', 1_000), 1);
});

test('wait calibration: tick-sized or infinite modelled waits teach nothing; ratios are bounded', () => {
  const c = new WaitCalibration(params);
  c.observe('interactive', 1_000, MIN_MODELLED_WAIT_MS - 1, 5_000);
  c.observe('interactive', 1_000, Infinity, 5_000);
  c.observe('interactive', 1_000, Number.NaN, 5_000);
  assert.equal(c.factor('interactive', 1_000), 1);
  for (let i = 0; i < 4; i++) c.observe('interactive', 1_000, 20, 1_000_000);
  assert.equal(c.factor('interactive', 1_000), 20, 'capped at 20×');
  for (let i = 0; i < 8; i++) c.observe('interactive', 1_000, 1_000, 0);
  assert.equal(c.factor('interactive', 1_000), 0.05, 'floored at 0.05×');
});

test('wait calibration: the summary lists each learned bucket from its smallest prompt', () => {
  const c = new WaitCalibration(params);
  for (let i = 0; i < 4; i++) c.observe('interactive', 3_000, 100, 200);
  assert.deepEqual(c.summary(), {
    interactive: [{ from_tokens: 2_897, samples: 4, ratio_p50: 2, ratio_p90: 2 }],
  });
});
