// A decision log replayed as a trace: what a fleet was offered, run again. Replayed under the
// policy that wrote it, the simulator is offered the same requests and decides as it did; under
// another, every request is offered, those it never served with the replies of ones like them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { runScenario, SCENARIO_DEFAULTS, type ScenarioSpec } from '../src/sim/scenario.ts';
import { loadPolicy } from '../src/sim/policy-source.ts';
import { tempDir } from './temp-dir.ts';

const dir = tempDir('replay');

function simulate(spec: Partial<ScenarioSpec>, policy: string, log?: string) {
  const write =
    log === undefined ? undefined : (r: unknown) => appendFileSync(log, `${JSON.stringify(r)}\n`);
  return runScenario({ ...SCENARIO_DEFAULTS, seed: 3, ...spec }, loadPolicy(policy), {
    wallClock: { now: () => 0 },
    onDecision: write,
    onOutcomeRecord: write,
  });
}

const overload = {
  rate: 40,
  numRequests: 1_500,
  replicas: 1,
  classes: 'interactive:3,batch:1',
  tenants: 'zipf:3:1.1',
};

test('a decision log replayed under its own policy is offered the same requests and decides as it did', () => {
  const log = join(dir, 'goodput.jsonl');
  const first = simulate(overload, 'goodput', log);
  const again = simulate({ trace: log, replicas: 1 }, 'goodput');
  assert.ok(first.admission.rejected > 300, 'an overload: many refused');
  assert.equal(again.offered.requests, first.offered.requests);
  assert.equal(again.offered.input_tokens, first.offered.input_tokens);
  assert.deepEqual(again.admission.reject_reasons, first.admission.reject_reasons);
  assert.equal(again.completed, first.completed);
  assert.deepEqual(Object.keys(again.tenants).sort(), Object.keys(first.tenants).sort());
  for (const [t, entry] of Object.entries(first.tenants as Record<string, { requests: number }>)) {
    assert.equal(
      (again.tenants as Record<string, { requests: number }>)[t].requests,
      entry.requests,
      t,
    );
  }
});

test('replayed under another policy, every request is offered; those never served take replies of ones like them', () => {
  const log = join(dir, 'for-baseline.jsonl');
  const first = simulate(overload, 'goodput', log);
  const baseline = simulate({ trace: log, replicas: 1 }, 'baseline-vllm');
  assert.equal(baseline.offered.requests, first.offered.requests);
  assert.equal(baseline.admission.rejected, 0, 'the baseline admits all');
  assert.equal(baseline.completed, first.offered.requests);
});

test("a log of a client's retries replays its requests once each: the replay's client retries them", () => {
  for (const retryMode of ['naive', 'disciplined'] as const) {
    const log = join(dir, `retries-${retryMode}.jsonl`);
    const client = { maxAttempts: 3, retryMode, clientTimeoutMs: 4_000 };
    const first = simulate({ ...overload, numRequests: 400, ...client }, 'goodput', log);
    assert.ok(first.client.retries > 100, `${retryMode}: retried`);
    const again = simulate({ trace: log, replicas: 1, ...client }, 'goodput');
    assert.equal(again.offered.requests, first.offered.requests, retryMode);
    assert.equal(again.offered.input_tokens, first.offered.input_tokens, retryMode);
  }
});
