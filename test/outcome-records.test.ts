// Each dispatched request's end is recorded beside its decision, found by the same id: what
// admission predicted and what happened, judged as the report judges it. Over a whole simulated
// run the records must add up to the report's own counts, request by request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runScenario, SCENARIO_DEFAULTS } from '../src/sim/scenario.ts';
import { loadPolicy } from '../src/sim/policy-source.ts';
import type { DecisionRecord } from '../src/core/observe/decision-record.ts';
import type { OutcomeRecord } from '../src/core/observe/outcome-record.ts';

test('outcome records add up to the report: one per dispatched request, judged alike', () => {
  const decisions = new Map<string, DecisionRecord>();
  const outcomes: OutcomeRecord[] = [];
  const report = runScenario(
    {
      ...SCENARIO_DEFAULTS,
      seed: 3,
      rate: 40,
      numRequests: 600,
      input: 'sharegpt-sarathi',
      output: 'sharegpt-sarathi',
      classes: 'interactive:0.7,batch:0.2,best_effort:0.1',
      replicas: 1,
      // Clients that give up and ask again: attempts of their own ids, some never dispatched.
      clientTimeoutMs: 20_000,
      maxAttempts: 3,
      // A replica twice as slow as its profile: until its pace is measured, some admitted
      // requests miss their objectives, and the records must count those misses as the report.
      slowdown: 2,
    },
    loadPolicy('goodput'),
    {
      wallClock: { now: () => 0 },
      onDecision: (r) => decisions.set(r.request_id, r),
      onOutcomeRecord: (r) => outcomes.push(r),
    },
  );
  const states = (s: string) => outcomes.filter((o) => o.outcome.state === s).length;
  assert.equal(states('completed'), report.completed);
  assert.ok(report.cancelled > 0, 'some clients gave up mid-stream');
  assert.ok(states('cancelled') > 0 && states('cancelled') <= report.cancelled);
  assert.equal(outcomes.filter((o) => o.outcome.good).length, report.slo.good);
  assert.equal(new Set(outcomes.map((o) => o.request_id)).size, outcomes.length, 'one per id');

  const misses: Record<string, Record<string, number>> = {};
  for (const { request_id, class: cls, outcome } of outcomes) {
    // The decision that dispatched it, and what it predicted.
    const d = decisions.get(request_id);
    assert.ok(d !== undefined, `${request_id}: no decision`);
    assert.ok(d.route !== null, `${request_id}: its decision dispatched it`);
    assert.equal(outcome.predicted_ttft_ms, d.admission.predicted_ttft_ms);
    assert.equal(outcome.good, outcome.missed === null);
    if (outcome.state === 'completed' && outcome.missed !== null) {
      (misses[cls] ??= {})[outcome.missed] = (misses[cls]?.[outcome.missed] ?? 0) + 1;
    }
  }
  const reported = Object.fromEntries(
    Object.entries(report.slo.by_class)
      .map(([cls, c]) => {
        // Admitted and never completed (expired in the queue, cancelled) is not a judged end.
        const { not_completed: _, ...judged } = c.admitted_misses as Record<string, number>;
        return [cls, judged];
      })
      .filter(([, m]) => Object.keys(m).length > 0),
  );
  assert.deepEqual(misses, reported, 'the misses by objective, as the report counts them');
  assert.ok(Object.keys(misses).length > 0, 'the run has misses to count');
});

test('an admitted request that expired in the queue: its record holds the Retry-After its client is told', () => {
  const expired: DecisionRecord[] = [];
  runScenario(
    {
      ...SCENARIO_DEFAULTS,
      seed: 3,
      rate: 200,
      numRequests: 3_000,
      replicas: 1,
      classes: 'interactive:3,batch:1,reasoning:1',
      arrival: 'gamma',
      burstiness: 0.1,
    },
    loadPolicy('goodput'),
    {
      wallClock: { now: () => 0 },
      onDecision: (r) => {
        if (r.admission.result === 'expire') expired.push(r);
      },
    },
  );
  assert.ok(expired.length > 0, 'a burst deep enough that some admitted requests expire');
  for (const r of expired) {
    // Its class's deadline: come back in a second, as the gateway answers it (503, Retry-After 1).
    assert.equal(r.admission.reason, 'deadline');
    assert.equal(r.admission.retry_after_ms, 1_000);
  }
});
