import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isGood } from './slo-judge.ts';
import type { RequestOutcome } from './request-outcome.ts';
import { DEFAULT_SLO_CLASSES } from '../request/slo-classes.ts';

const base: RequestOutcome = {
  id: 'r1',
  tenant: 't',
  sloClass: 'interactive',
  state: 'completed',
  admitted: true,
  inputTokens: 100,
  outputTokens: 10,
  cachedTokens: 0,
  ttftMs: 500,
  e2eMs: 1400,
  itlP99Ms: 60,
  maxStallMs: 70,
  attempts: 1,
  preemptions: 0,
};
const interactive = DEFAULT_SLO_CLASSES.interactive.objectives;

const cases: Array<[string, Partial<RequestOutcome>, boolean]> = [
  ['within every objective', {}, true],
  ['TTFT exactly at the limit', { ttftMs: 2000 }, true],
  ['TTFT over', { ttftMs: 2000.001 }, false],
  ['p99 gap over', { itlP99Ms: 81 }, false],
  ['one-token answer has no gap to judge', { outputTokens: 1, itlP99Ms: undefined }, true],
  ['failed is never good', { state: 'failed' }, false],
  ['cancelled is never good', { state: 'cancelled' }, false],
  ['rejected is never good', { state: 'rejected', admitted: false }, false],
];

for (const [name, change, good] of cases) {
  test(`interactive: ${name}`, () =>
    assert.equal(isGood({ ...base, ...change }, interactive), good));
}

test('batch judges only its completion deadline', () => {
  const batch = DEFAULT_SLO_CLASSES.batch.objectives;
  assert.equal(isGood({ ...base, ttftMs: 60_000, itlP99Ms: 900, e2eMs: 3_000_000 }, batch), true);
  assert.equal(isGood({ ...base, e2eMs: 3_600_001 }, batch), false);
});

test('tpot objective uses vLLM TPOT', () => {
  // (1400 - 500) / 9 = 100 ms per token
  assert.equal(isGood(base, { tpotMs: 100 }), true);
  assert.equal(isGood(base, { tpotMs: 99 }), false);
});
