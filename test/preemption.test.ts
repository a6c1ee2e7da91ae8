// Engine preemption chosen by class and by cost. Under KV pressure (a small KV pool, half
// interactive, half batch), vLLM's FCFS engine preempts whoever was admitted last, interactive
// streams included; with `--scheduling-policy priority` (the class band as vLLM's request
// priority) the victims are batch requests, and interactive keeps its SLO. `--preemption auto`
// picks, per victim, the cheaper of recompute and swap by the timing profile and the host link.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { run } from './helpers.ts';
import type { ScenarioSpec } from '../src/sim/scenario.ts';

const pressured: Partial<ScenarioSpec> = {
  rate: 30,
  numRequests: 1_500,
  input: 'sharegpt-vllm',
  output: 'sharegpt-vllm',
  classes: 'interactive:0.5,batch:0.5',
  kvBlocks: 2_000,
};

test('priority scheduling makes batch requests the victims: interactive is not preempted', () => {
  const fcfs = run({ ...pressured, schedulingPolicy: 'fcfs' });
  const priority = run({ ...pressured, schedulingPolicy: 'priority' });
  const cls = (r: typeof fcfs, c: 'interactive' | 'batch') => r.slo.by_class[c];
  assert.ok(cls(fcfs, 'interactive').preemptions > 100, 'FCFS preempts interactive streams');
  assert.equal(cls(priority, 'interactive').preemptions, 0);
  assert.ok(cls(priority, 'batch').preemptions > 0);
  assert.ok(
    cls(priority, 'interactive').attainment_offered > cls(fcfs, 'interactive').attainment_offered,
  );
  assert.equal(cls(priority, 'batch').attainment_offered, 1, 'batch still within its hour');
});

test('preemption modes are counted as they happen; auto takes the cheaper per victim', () => {
  const long: Partial<ScenarioSpec> = {
    rate: 4,
    numRequests: 300,
    input: 'uniform:3000:6000',
    output: 'uniform:200:800',
    kvBlocks: 3_000,
  };
  const recompute = run({ ...long, preemption: 'recompute' });
  const swap = run({ ...long, preemption: 'swap' });
  const auto = run({ ...long, preemption: 'auto' });
  const p = (r: typeof auto) => r.preemption;
  assert.equal(p(recompute).swap, 0);
  assert.ok(p(recompute).recomputed_tokens > 0);
  assert.equal(p(swap).recompute, 0);
  assert.ok(p(swap).swapped_bytes > 0);
  // Thousands of tokens of context move over the host link faster than they prefill again.
  assert.ok(p(auto).swap > 0 && p(auto).swap >= p(auto).recompute);
  assert.ok(auto.latency_ms.e2el.mean <= recompute.latency_ms.e2el.mean);
});

test('TTFT boost: under priority scheduling a reasoning request near its deadline goes before interactive ones', () => {
  const mix: Partial<ScenarioSpec> = {
    rate: 60,
    numRequests: 3_000,
    input: 'sharegpt-vllm',
    output: 'sharegpt-vllm',
    classes: 'interactive:0.8,reasoning:0.2',
    maxNumSeqs: 64,
    schedulingPolicy: 'priority',
  };
  const plain = run(mix).slo.by_class.reasoning;
  const boosted = run({ ...mix, ttftBoostMs: 3_000 }).slo.by_class.reasoning;
  assert.ok(plain.attainment_offered < 0.1, `without: ${plain.attainment_offered}`);
  assert.ok(boosted.attainment_offered > 0.4, `with: ${boosted.attainment_offered}`);
  assert.throws(() => run({ ...mix, schedulingPolicy: 'fcfs', ttftBoostMs: 3_000 }), /ttftBoostMs/);
});

test('slack-aware victims under FCFS: batch requests give KV back, streaming interactive ones keep their gaps', () => {
  const newest = run({ ...pressured, schedulingPolicy: 'fcfs' });
  const slack = run({ ...pressured, schedulingPolicy: 'fcfs', preemptionVictims: 'slack' });
  const cls = (r: typeof slack, c: 'interactive' | 'batch') => r.slo.by_class[c];
  // Newest-first takes whoever was admitted last; an 80 ms gap objective has 80 ms of slack and
  // an hour's completion deadline has the most, so the victims are batch requests.
  assert.ok(cls(newest, 'interactive').preemptions > 100);
  assert.ok(cls(slack, 'interactive').preemptions < cls(newest, 'interactive').preemptions / 10);
  assert.ok(cls(slack, 'batch').preemptions > cls(newest, 'batch').preemptions);
  assert.equal(cls(slack, 'interactive').admitted_misses.itl ?? 0, 0, 'no stream loses its gap');
  assert.ok((cls(newest, 'interactive').admitted_misses.itl ?? 0) > 0);
  assert.equal(cls(slack, 'batch').attainment_offered, 1, 'batch still within its hour');
  // The engine queue is still FCFS: interactive first tokens wait behind batch prompts either
  // way (priority scheduling is what reorders the queue).
});
