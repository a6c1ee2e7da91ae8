import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DecisionRecord } from './decision-record.ts';
import type { RequestOutcome } from './request-outcome.ts';
import { RunTimeline } from './run-timeline.ts';

function record(
  atMs: number,
  result: DecisionRecord['admission']['result'],
  extra: Partial<DecisionRecord['admission']> = {},
  routed = false,
): DecisionRecord {
  return {
    request_id: `r${atMs}`,
    tenant: 't',
    class: 'interactive',
    policy_revision: 'p@1',
    at_ms: atMs,
    asked: null,
    slo_ms: null,
    demand: null,
    admission: {
      result,
      deferred: false,
      reason: null,
      status: null,
      retry_after_ms: null,
      kept_turn: false,
      slack_ms: null,
      predicted_ttft_ms: null,
      predicted_wait_ms: null,
      queue_target_ms: null,
      degrade_level: null,
      degraded_max_tokens: null,
      dropped_input_tokens: null,
      ...extra,
    },
    route: routed
      ? { replica: 0, prefix_hit_tokens: 0, queued_ms: 0, staged_piece_tokens: null }
      : null,
    waited_ms: null,
  };
}

function done(tenant: string, ttftMs: number, outputTokens = 3): RequestOutcome {
  return {
    id: 'x',
    tenant,
    sloClass: 'interactive',
    state: 'completed',
    admitted: true,
    inputTokens: 10,
    outputTokens,
    cachedTokens: 10,
    ttftMs,
    e2eMs: ttftMs + (outputTokens - 1) * 20,
    attempts: 1,
    preemptions: 0,
  };
}

test('run timeline: door outcomes, offered and good rates, tenant shares per second', () => {
  const t = new RunTimeline({ weights: { input: 1, output: 2 } });
  t.decision(record(100, 'admit', { predicted_wait_ms: 10, slack_ms: 500 }));
  t.decision(record(200, 'admit', { predicted_wait_ms: 30, slack_ms: 200 }));
  t.decision(record(300, 'reject', { reason: 'deadline' }));
  t.decision(record(900, 'expire', { reason: 'deadline' }, true));
  t.decision(record(1500, 'expire', { reason: 'deadline' }));
  // Cut by a drain: in the queue, its one record; streaming, its second.
  t.decision(record(1600, 'abort', { reason: 'shutting_down' }));
  t.decision(record(1700, 'abort', { reason: 'shutting_down' }, true));
  t.outcome(done('a', 50), 800, true);
  t.outcome(done('b', 400), 1200, false);
  t.outcome(done('b', 60), 1300, true);
  const d = t.data();
  assert.deepEqual(d.t_s, [0, 1]);
  assert.deepEqual(d.outcomes, {
    admit: [2, 0],
    abort: [0, 1],
    'cut:deadline': [1, 0],
    'cut:shutting_down': [0, 1],
    'expire:deadline': [0, 1],
    'reject:deadline': [1, 0],
  });
  assert.deepEqual(d.offered_rps, [3, 2], 'a cut stream was offered once, when admitted');
  assert.deepEqual(d.good_rps, [1, 1]);
  assert.deepEqual(d.completed_rps, [1, 2]);
  assert.deepEqual(d.tenant_share, { a: [1, 0], b: [0, 1] });
  assert.deepEqual(d.predicted_wait_ms, [20, null]);
  assert.deepEqual(d.min_slack_ms, [200, null]);
  assert.equal(d.ttft_cdf.at(-1)?.p, 1);
  assert.ok(d.ttft_cdf[0].ms >= 50 && d.ttft_cdf[0].ms < 50 * 1.13);
  assert.deepEqual(
    d.tpot_cdf.map((p) => p.p),
    [1],
    'every TPOT is 20 ms',
  );
});

test('run timeline: past maxBuckets the width doubles and pairs merge, nothing lost', () => {
  const t = new RunTimeline({ weights: { input: 1, output: 1 }, maxBuckets: 4 });
  for (let s = 0; s < 10; s++) t.decision(record(s * 1000 + 1, 'admit'));
  const d = t.data();
  assert.equal(d.bucket_s, 4);
  assert.deepEqual(d.t_s, [0, 4, 8]);
  assert.deepEqual(d.outcomes.admit, [4, 4, 2]);
  assert.deepEqual(d.offered_rps, [1, 1, 0.5]);
});

test('run timeline: past two dozen tenants, those served most are drawn by name and the rest as one', () => {
  const t = new RunTimeline({ weights: { input: 1, output: 2 } });
  // Tenant k is served k requests: t01 least, t30 most.
  for (let k = 1; k <= 30; k++) {
    const name = `t${String(k).padStart(2, '0')}`;
    for (let i = 0; i < k; i++) t.outcome(done(name, 50), 500, true);
  }
  const share = t.data().tenant_share;
  const names = Object.keys(share);
  assert.equal(names.length, 25);
  assert.ok(names.includes('t30') && names.includes('t07') && !names.includes('t06'));
  assert.ok(names.includes('6 other tenants'));
  // The six least served: 1 + … + 6 of 465 requests.
  assert.ok(Math.abs((share['6 other tenants'][0] ?? 0) - 21 / 465) < 1e-12);
  const sum = names.reduce((x, n) => x + (share[n][0] ?? 0), 0);
  assert.ok(Math.abs(sum - 1) < 1e-12);
});
