import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  RETRY_BUDGET_CAPACITY,
  RETRY_FLOOR_PER_S,
  chargeRetryBudget,
  checkRetryBudget,
  newRetryBudget,
} from './retry-budget.ts';

test('first attempts always pass and deposit; retries withdraw until the budget is spent', () => {
  const s = newRetryBudget(0);
  assert.ok(checkRetryBudget({ level: 0, updatedMs: 0 }, 1, 0).pass);
  let admitted = 0;
  while (checkRetryBudget(s, 2, 0).pass) {
    chargeRetryBudget(s, 2, 0.2, 0);
    admitted++;
  }
  assert.equal(admitted, RETRY_BUDGET_CAPACITY / 2);
  for (let i = 0; i < 10; i++) chargeRetryBudget(s, 1, 0.2, 0);
  assert.ok(checkRetryBudget(s, 3, 0).pass, 'ten first attempts at ratio 0.2 buy two retries');
});

test('an empty budget refuses retries with 429 retry_budget and a bounded Retry-After', () => {
  const rows: Array<[level: number, retryAfterMs: number]> = [
    [0.5, 500 / RETRY_FLOOR_PER_S],
    [0, 1_000 / RETRY_FLOOR_PER_S],
    [-100, 60_000],
  ];
  for (const [level, retryAfterMs] of rows) {
    const v = checkRetryBudget({ level, updatedMs: 0 }, 2, 0);
    assert.deepEqual(v, { pass: false, reason: 'retry_budget', status: 429, retryAfterMs });
  }
});

test('the floor refills a quiet tenant, never beyond capacity', () => {
  const s = { level: 0, updatedMs: 0 };
  assert.equal(checkRetryBudget(s, 2, 999).pass, false);
  assert.ok(checkRetryBudget(s, 2, 1_000 / RETRY_FLOOR_PER_S).pass);
  chargeRetryBudget(s, 1, 0, 10_000_000);
  assert.equal(s.level, RETRY_BUDGET_CAPACITY);
});

test('check never mutates', () => {
  const s = { level: 0.5, updatedMs: 0 };
  checkRetryBudget(s, 2, 5_000);
  assert.deepEqual(s, { level: 0.5, updatedMs: 0 });
});
