// What a simulator report's rates and totals are taken over: the run lasts as long as its
// requests (not until a group still starting is ready), throughput and pooled token gaps are of
// completed requests (as vLLM's benchmark counts them), a fixed fleet that lost a group reports
// the GPUs it had, and a tenant is charged service only for what an engine began to serve.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadPolicy } from '../src/sim/policy-source.ts';
import { runScenario, SCENARIO_DEFAULTS, type ScenarioSpec } from '../src/sim/scenario.ts';
import type { RequestOutcome } from '../src/core/observe/request-outcome.ts';
import type { Ms } from '../src/core/request/units.ts';

interface Seen {
  readonly outcomes: RequestOutcome[];
  lastMs: Ms;
}

function runSeeing(spec: Partial<ScenarioSpec>, policy = 'goodput') {
  const seen: Seen = { outcomes: [], lastMs: 0 };
  const report = runScenario({ ...SCENARIO_DEFAULTS, seed: 1, ...spec }, loadPolicy(policy), {
    wallClock: { now: () => 0 },
    onOutcome: (o, atMs) => {
      seen.outcomes.push(o);
      seen.lastMs = Math.max(seen.lastMs, atMs);
    },
  });
  return { report, seen };
}

const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);

test('a run lasts as long as its requests, not until the groups it started are ready', () => {
  const { report: r, seen } = runSeeing({
    rate: 20,
    numRequests: 600,
    autoscaler: 'goodput',
    minReplicas: 1,
    maxReplicas: 6,
  });
  const a = r.autoscale as { groups_started: number; ready_time_s: { mean: number } };
  assert.ok(a.groups_started > 0, 'it scaled out');
  assert.ok(a.ready_time_s.mean > r.duration_s, 'its groups were still starting at the end');
  assert.ok(Math.abs(r.duration_s - seen.lastMs / 1e3) < 1e-5, `${r.duration_s} s`);
  const good = r.slo.good;
  assert.ok(Math.abs(r.goodput.requests_per_s - good / r.duration_s) < 1e-5);
});

test('throughput and the pooled token gaps count completed requests only', () => {
  const { report: r, seen } = runSeeing({
    rate: 6,
    numRequests: 400,
    replicas: 2,
    failGroupAtS: [20],
  });
  const completed = seen.outcomes.filter((o) => o.state === 'completed');
  const cut = seen.outcomes.filter((o) => o.state !== 'completed' && o.outputTokens > 0);
  assert.ok(cut.length > 0, 'the failure cut streams under way');
  const tokens = sum(completed.map((o) => o.outputTokens));
  const perS = r.throughput.output_tokens_per_s;
  assert.ok(Math.abs(perS - tokens / r.duration_s) < 1e-3, `${perS} vs ${tokens / r.duration_s}`);
  const gaps = sum(completed.map((o) => Math.max(0, o.outputTokens - 1)));
  assert.equal((r.latency_ms.itl as { count: number }).count, gaps);
});

test('a failed group: only the requests admission took again count as moved; the rest as lost', () => {
  // One replica: once it fails there is nowhere to go, and every request it held is refused.
  const alone = runSeeing({ rate: 10, numRequests: 200, replicas: 1, failGroupAtS: [5] }).report;
  const lost = alone.fail_reasons.replica_lost ?? 0;
  assert.ok(lost > 0, 'streams were under way');
  assert.deepEqual(alone.fleet.failures, {
    groups: 1,
    failovers: 0,
    streams_resumed: 0,
    recomputed_tokens: 0,
    streams_lost: lost,
  });
  // Two: the other takes them.
  const two = runSeeing({ rate: 6, numRequests: 400, replicas: 2, failGroupAtS: [20] }).report;
  assert.ok((two.fleet.failures?.streams_resumed ?? 0) > 0);
  assert.ok((two.fleet.failures?.recomputed_tokens ?? 0) > 0);
});

test('a fixed fleet that lost a group reports the ready replicas it had, not the ones it started with', () => {
  const { report: r } = runSeeing({ rate: 6, numRequests: 400, replicas: 2, failGroupAtS: [20] });
  const ready = r.fleet.replicas_ready_mean;
  const expected = (2 * 20 + (r.duration_s - 20)) / r.duration_s;
  assert.ok(Math.abs(ready - expected) < 1e-3, `${ready} vs ${expected}`);
  const whole = runSeeing({ rate: 6, numRequests: 400, replicas: 2 }).report;
  assert.equal(whole.fleet.replicas_ready_mean, 2);
});

test("a tenant's service is what an engine began to serve: a request that expired queued adds none", () => {
  const { report: r, seen } = runSeeing({
    rate: 20,
    numRequests: 600,
    replicas: 1,
    classes: 'interactive:3,batch:1,reasoning:1',
    tenants: 'zipf:3:1.1',
    seed: 7,
  });
  const queuedOut = seen.outcomes.filter((o) => o.admitted && o.queueMs === undefined);
  assert.ok(queuedOut.length > 0, 'some admitted requests never reached an engine');
  const tenants = r.tenants as Record<string, { service: number }>;
  const served = seen.outcomes.filter((o) => o.queueMs !== undefined);
  const service = (t: string) =>
    sum(
      served
        .filter((o) => o.tenant === t)
        .map(
          (o) =>
            r.tenant_service_weights.input * o.inputTokens +
            r.tenant_service_weights.output * o.outputTokens,
        ),
    );
  for (const [t, entry] of Object.entries(tenants)) assert.equal(entry.service, service(t), t);
});
