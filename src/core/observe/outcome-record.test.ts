import { test } from 'node:test';
import assert from 'node:assert/strict';
import { outcomeRecord } from './outcome-record.ts';
import { DEFAULT_SLO_CLASSES } from '../request/slo-classes.ts';
import type { RequestOutcome } from './request-outcome.ts';

const base: RequestOutcome = {
  id: 'r1',
  tenant: 't',
  sloClass: 'interactive',
  state: 'completed',
  admitted: true,
  inputTokens: 100,
  outputTokens: 20,
  cachedTokens: 0,
  attempts: 1,
  preemptions: 0,
};
const cls = DEFAULT_SLO_CLASSES.interactive; // TTFT ≤ 2 s, p99 gap ≤ 80 ms

test('an outcome is judged as reports judge it, beside what was predicted', () => {
  const good = outcomeRecord(
    { ...base, ttftMs: 412.34567, e2eMs: 1200, itlP99Ms: 41.2, maxStallMs: 44, relayMaxMs: 3.5 },
    cls,
    5000.0004,
    380.1234,
  );
  assert.deepEqual(good, {
    request_id: 'r1',
    tenant: 't',
    class: 'interactive',
    at_ms: 5000,
    outcome: {
      state: 'completed',
      output_tokens: 20,
      ttft_ms: 412.346,
      predicted_ttft_ms: 380.123,
      itl_p99_ms: 41.2,
      max_gap_ms: 44,
      relay_max_ms: 3.5,
      e2e_ms: 1200,
      good: true,
      missed: null,
    },
  });
  const late = outcomeRecord({ ...base, ttftMs: 2400, e2eMs: 3000, itlP99Ms: 90 }, cls, 0, 300);
  assert.deepEqual([late.outcome.good, late.outcome.missed], [false, 'ttft']);
  const gappy = outcomeRecord({ ...base, ttftMs: 300, e2eMs: 3000, itlP99Ms: 90 }, cls, 0, 300);
  assert.deepEqual([gappy.outcome.good, gappy.outcome.missed], [false, 'itl']);
});

test('a stream cut before its first token: nothing measured, nothing predicted is null', () => {
  const cut = outcomeRecord({ ...base, state: 'failed', outputTokens: 0 }, cls, 10, undefined);
  assert.deepEqual(cut.outcome, {
    state: 'failed',
    output_tokens: 0,
    ttft_ms: null,
    predicted_ttft_ms: null,
    itl_p99_ms: null,
    max_gap_ms: null,
    relay_max_ms: null,
    e2e_ms: null,
    good: false,
    missed: 'not_completed',
  });
});
