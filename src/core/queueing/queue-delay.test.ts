// Tests for QueueDelayControl (queue-delay.ts): when the target sojourn is in force.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { QueueDelayControl } from './queue-delay.ts';

const BUDGET = 1_600;
const control = () => new QueueDelayControl({ targetRatio: 0.25, intervalMs: 1_000 });

test('queue delay: not in force while the queue shows waits under the target', () => {
  const q = control();
  assert.equal(q.targetMs('interactive', BUDGET, -Infinity, 0), null, 'nothing waits');
  assert.equal(q.targetMs('interactive', BUDGET, 399, 10), null, 'just under 0.25 × 1,600');
});

test('queue delay: a wait at the target brings it into force at once, for that class only', () => {
  const q = control();
  assert.equal(q.targetMs('interactive', BUDGET, 400, 0), 400);
  assert.equal(q.targetMs('batch', BUDGET, 0, 0), null);
});

test('queue delay: it holds for an interval after the last wait at the target', () => {
  const q = control();
  q.targetMs('interactive', BUDGET, 500, 0);
  assert.equal(q.targetMs('interactive', BUDGET, 0, 999), 400, 'still within the interval');
  assert.equal(q.targetMs('interactive', BUDGET, 450, 1_500), 400, 'seen again: renewed');
  assert.equal(q.targetMs('interactive', BUDGET, 0, 2_499), 400);
  assert.equal(q.targetMs('interactive', BUDGET, 0, 2_500), null, 'a whole interval without');
});

test('queue delay: refusals for the wait keep it in force, however short the queue looks', () => {
  const q = control();
  q.targetMs('interactive', BUDGET, 500, 0);
  for (let t = 500; t <= 5_000; t += 500) {
    q.refused('interactive', t);
    assert.equal(q.targetMs('interactive', BUDGET, 0, t + 999), 400, `at ${t + 999}`);
  }
  assert.equal(q.targetMs('interactive', BUDGET, 0, 6_000), null);
});

test('queue delay: a refusal while not in force does not bring it into force', () => {
  const q = control();
  q.refused('interactive', 0);
  assert.equal(q.targetMs('interactive', BUDGET, 0, 1), null);
});

test('queue delay: the target follows the budget it is given', () => {
  const q = control();
  assert.equal(q.targetMs('interactive', 800, 200, 0), 200);
  assert.equal(q.targetMs('interactive', 2_000, 0, 1), 500);
});
