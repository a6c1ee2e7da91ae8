// Retry storms in miniature: clients that time out and retry under overload. Disciplined
// clients (backoff ≥ Retry-After, one idempotency key and absolute deadline, no retry after
// tokens) must leave goodput where it was without retries; naive ones (at once, as new
// requests, even after tokens) must show what they cost.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ScenarioSpec } from '../src/sim/scenario.ts';
import { run } from './helpers.ts';

const overload: Partial<ScenarioSpec> = {
  rate: 6,
  numRequests: 500,
  input: 'sharegpt-sarathi',
  output: 'sharegpt-sarathi',
  replicas: 1,
  clientTimeoutMs: 5_000,
};

for (const policy of ['baseline-vllm', 'goodput']) {
  test(`${policy}: disciplined retries keep goodput, naive ones amplify and cost it`, () => {
    const none = run({ ...overload, maxAttempts: 1 }, policy);
    const disciplined = run({ ...overload, maxAttempts: 4, retryMode: 'disciplined' }, policy);
    const naive = run({ ...overload, maxAttempts: 4, retryMode: 'naive' }, policy);
    assert.ok(
      disciplined.slo.good >= 0.8 * none.slo.good,
      `${disciplined.slo.good} vs ${none.slo.good}`,
    );
    assert.ok(
      naive.slo.good < disciplined.slo.good,
      `${naive.slo.good} vs ${disciplined.slo.good}`,
    );
    assert.ok(naive.client.retry_amplification > disciplined.client.retry_amplification);
    assert.equal(none.client.retry_amplification, 1);
  });
}
