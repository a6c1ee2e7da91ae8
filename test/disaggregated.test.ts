// Disaggregated serving: a prefill pool computes every prompt and sends its KV to the decode
// replica the control plane chose. On 4 H100s and 1.5K–3K-token prompts at 24 req/s, four
// aggregated replicas put each prompt's prefill beside running streams and break their token
// gaps; two prefill and two decode replicas keep every gap short. A pool too small for the
// prompts holds the queue at the gateway (`prefill-fit`), where admission refuses what would
// miss rather than admitting every request into a prefill queue of seconds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deterministicPart, run } from './helpers.ts';
import { runScenario, SCENARIO_DEFAULTS, type ScenarioSpec } from '../src/sim/scenario.ts';
import { loadPolicy } from '../src/sim/policy-source.ts';
import type { DecisionRecord } from '../src/core/observe/decision-record.ts';

const longPrompts: Partial<ScenarioSpec> = {
  rate: 24,
  numRequests: 3_000,
  input: 'uniform:1500:3000',
  output: 'uniform:100:400',
  classes: 'interactive:1',
};

test('2 prefill + 2 decode replicas keep every token gap where 4 aggregated replicas break them', () => {
  const aggregated = run({ ...longPrompts, replicas: 4 });
  const split = run({ ...longPrompts, replicas: 2, prefillReplicas: 2 });
  const interactive = (r: typeof split) => r.slo.by_class.interactive;
  assert.ok(interactive(aggregated).attainment_offered < 0.5, 'prefills stall the streams');
  assert.ok((interactive(aggregated).admitted_misses.itl ?? 0) > 1_000);
  assert.equal(interactive(split).attainment_offered, 1);
  assert.ok(
    split.latency_ms.itl.p99 < 30,
    `decode steps carry no prompt: ${split.latency_ms.itl.p99}`,
  );
  // Every prompt's KV crossed the link once, and TTFT paid for it.
  const pool = split.fleet.prefill;
  assert.ok(pool !== undefined);
  assert.equal(pool.replicas, 2);
  assert.equal(pool.kv_transfers, 3_000);
  assert.ok(pool.kv_transfer_ms_mean > 2 && pool.kv_transfer_ms_mean < 20);
  assert.ok(split.latency_ms.ttft.p50 > aggregated.latency_ms.ttft.p50);
  // The prefill pool's GPUs are paid for: four GPUs for the run, as the aggregated fleet.
  const perSecond = (r: typeof split) => r.fleet.gpu_seconds / r.duration_s;
  assert.ok(Math.abs(perSecond(split) - 4) < 0.01, `${perSecond(split)} GPUs`);
  assert.equal(split.engine.kv_used_blocks_at_end, 0);
  assert.equal(
    deterministicPart(split),
    deterministicPart(run({ ...longPrompts, replicas: 2, prefillReplicas: 2 })),
  );
});

test('a prefill pool too small for the prompts: the queue stays at the gateway, and admission refuses what would miss', () => {
  const small = run({ ...longPrompts, replicas: 3, prefillReplicas: 1 }, 'goodput');
  const c = small.slo.by_class.interactive;
  assert.ok(c.admitted < c.requests, 'some are refused at the door');
  assert.ok(c.attainment_admitted > 0.99, `admitted ${c.attainment_admitted}`);
  assert.ok(c.attainment_offered > 0.6, `offered ${c.attainment_offered}`);
  // Without admission (vLLM's proxy sends every request on), the prefill queue takes seconds.
  const open = run({ ...longPrompts, replicas: 3, prefillReplicas: 1 });
  assert.ok(open.latency_ms.ttft.p50 > 5_000, `${open.latency_ms.ttft.p50} ms`);
  assert.ok(open.slo.by_class.interactive.attainment_offered < c.attainment_offered / 2);
});

test("the decision record shows the hand-over admission counted in a request's TTFT", () => {
  const records = (spec: Partial<ScenarioSpec>) => {
    const out: DecisionRecord[] = [];
    runScenario(
      { ...SCENARIO_DEFAULTS, seed: 1, ...longPrompts, numRequests: 300, ...spec },
      loadPolicy('goodput'),
      {
        wallClock: { now: () => 0 },
        onDecision: (r) => out.push(r),
      },
    );
    return out.filter((r) => r.admission.result === 'admit');
  };
  const split = records({ replicas: 2, prefillReplicas: 2 });
  assert.ok(split.length > 0);
  for (const r of split) {
    const d = r.demand;
    const a = r.admission;
    assert.ok(d !== null && d.handover_ms > 0, `${r.request_id}: hand-over ${d?.handover_ms}`);
    assert.ok(a.predicted_ttft_ms !== null && a.predicted_wait_ms !== null);
    // Rounded parts of a rounded sum: within a few thousandths.
    assert.ok(a.predicted_ttft_ms + 0.01 >= a.predicted_wait_ms + d.prefill_ms + d.handover_ms);
  }
  for (const r of records({ replicas: 4 })) assert.equal(r.demand?.handover_ms, 0);
});

test('disaggregated chats: the prefill pool places a prompt where its prefix is cached, and only what the decode side lacks crosses', () => {
  const r = run({
    rate: 16,
    numRequests: 3_000,
    prefix: 'chat:1',
    replicas: 2,
    prefillReplicas: 2,
    classes: 'interactive',
  });
  const pool = r.fleet.prefill;
  assert.ok(pool !== undefined);
  // Placing each prompt on the least loaded prefill replica alone hit 66% here, with a TTFT p99
  // of 161 ms: a chat's next turn found its history on the other replica half the time.
  assert.ok(pool.prefix_hit_rate >= 0.72, `pool hit rate ${pool.prefix_hit_rate}`);
  assert.ok(r.latency_ms.ttft.p99 < 140, `TTFT p99 ${r.latency_ms.ttft.p99} ms`);
  // The decode replica pulls only what its own cache lacks: a chat's history crosses once.
  // Every whole prompt sent took 8.3 ms on average here (874 GiB).
  assert.ok(pool.kv_transfer_ms_mean < 5, `transfer mean ${pool.kv_transfer_ms_mean} ms`);
  assert.ok(pool.kv_transferred_gib < 400, `${pool.kv_transferred_gib} GiB`);
});

test('disaggregated: clients that give up while their prompt waits to prefill, and a decode group that fails, lose nothing', () => {
  const r = run({
    ...longPrompts,
    numRequests: 1_500,
    replicas: 3,
    prefillReplicas: 1,
    clientTimeoutMs: 8_000,
    failGroupAtS: [20],
  });
  const rejected = r.admission.rejected;
  assert.equal(r.completed + r.failed + r.cancelled + rejected, 1_500);
  assert.ok(r.cancelled > 0, 'some gave up while their prompt waited in the prefill pool');
  const failures = r.fleet.failures;
  assert.equal(failures?.groups, 1);
  assert.ok((failures?.failovers ?? 0) > 0, 'requests bound for the failed group moved elsewhere');
  assert.equal(r.running, 0);
  assert.equal(r.engine.kv_used_blocks_at_end, 0, 'no KV left held on either pool');
});

test('autoscaled, the prefill and decode pools scale apart, each on its own signals, and both are paid for', () => {
  const r = run(
    {
      ...longPrompts,
      rate: 12,
      numRequests: 8_000,
      scenario: 'diurnal-burst',
      autoscaler: 'goodput',
      minReplicas: 1,
      maxReplicas: 8,
      replicas: 1,
      prefillReplicas: 1,
      prefillMaxReplicas: 8,
      readyTime: '60-120',
    },
    'goodput',
  );
  const scale = r.autoscale as {
    groups_started: number;
    reversals_in_window: number;
    timeline: { t_s: number; desired: number }[];
    prefill: {
      groups_started: number;
      reversals_in_window: number;
      timeline: { desired: number }[];
    };
  };
  assert.ok(scale.groups_started > 0 && scale.prefill.groups_started > 0, 'both pools grew');
  // The prompts are long: the prefill pool is the first to need a second group.
  const firstAbove1 = (tl: { desired: number }[]) => tl.findIndex((s) => s.desired > 1);
  assert.ok(firstAbove1(scale.prefill.timeline) < firstAbove1(scale.timeline));
  assert.equal(scale.reversals_in_window, 0);
  assert.equal(scale.prefill.reversals_in_window, 0);
  assert.ok(r.slo.by_class.interactive.attainment_offered > 0.95);
  assert.equal(r.completed + r.failed + r.cancelled + r.admission.rejected, 8_000);
  // GPUs are held from request to removal: at least the ready time of both pools.
  const pool = r.fleet.prefill;
  assert.ok(pool !== undefined && pool.replicas_ready_mean > 1);
  const readyGpuS = (r.fleet.replicas_ready_mean + pool.replicas_ready_mean) * r.duration_s;
  assert.ok(r.fleet.gpu_seconds >= readyGpuS, `${r.fleet.gpu_seconds} < ${readyGpuS}`);
});
