import { test } from 'node:test';
import assert from 'node:assert/strict';
import { QueueBudgets } from './queue-budget.ts';
import { DEFAULT_SLO_CLASSES } from '../request/slo-classes.ts';

test('budget = TTFT − route p99 − service p99 − margin, per class, once measured', () => {
  const b = new QueueBudgets(DEFAULT_SLO_CLASSES, 50, 10);
  assert.deepEqual(b.of('interactive'), { budgetMs: null, serviceP99Ms: null, samples: 0 });
  for (let i = 1; i <= 100; i++) b.observe('interactive', i); // p99 = 99.01
  const got = b.of('interactive');
  assert.equal(got.samples, 100);
  assert.ok(Math.abs((got.serviceP99Ms ?? 0) - 99.01) < 1e-9);
  assert.ok(Math.abs((got.budgetMs ?? 0) - (2_000 - 10 - 99.01 - 50)) < 1e-9);
  assert.equal(b.of('reasoning').budgetMs, null, 'not measured yet');
  b.observe('batch', 5);
  assert.equal(b.of('batch').budgetMs, null, 'no TTFT objective, no queue budget');
});

test('never negative: a class whose service alone exceeds its TTFT has no time to queue', () => {
  const b = new QueueBudgets(DEFAULT_SLO_CLASSES, 0);
  b.observe('interactive', 5_000);
  assert.equal(b.of('interactive').budgetMs, 0);
});
