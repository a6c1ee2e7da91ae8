// Several choices of one prompt (`--n`) in the simulator, as vLLM V1 serves them: each choice a
// request of its own in the engine, the prompt computed once and found by the others in the
// prefix cache; the request's first token is any choice's, its TPOT the longest choice's, and it
// ends when every choice has. A V0 engine version, which forks a sequence group the model has
// not, is refused naming the flag; a group failure ends the streams under way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../src/core/errors.ts';
import type { DecisionRecord } from '../src/core/observe/decision-record.ts';
import { tpotMs, type RequestOutcome } from '../src/core/observe/request-outcome.ts';
import { loadPolicy } from '../src/sim/policy-source.ts';
import { runScenario, SCENARIO_DEFAULTS, type ScenarioSpec } from '../src/sim/scenario.ts';
import { deterministicPart, run } from './helpers.ts';
import { tempDir } from './temp-dir.ts';

const groups: Partial<ScenarioSpec> = {
  numRequests: 100,
  rate: 1,
  input: 'fixed:1000',
  output: 'fixed:32',
  choices: 4,
};

function observed(spec: Partial<ScenarioSpec>, policy = 'goodput') {
  const outcomes: RequestOutcome[] = [];
  const decisions: DecisionRecord[] = [];
  const report = runScenario({ ...SCENARIO_DEFAULTS, seed: 1, ...spec }, loadPolicy(policy), {
    wallClock: { now: () => 0 },
    onOutcome: (o) => outcomes.push(o),
    onDecision: (r) => decisions.push(r),
  });
  return { report, outcomes, decisions };
}

test('n choices: the prompt is computed once, every choice streams its reply, TPOT is one choice’s', () => {
  const { report, outcomes, decisions } = observed(groups);
  assert.equal(report.completed, 100);
  assert.equal((report.scenario.workload as { choices?: number }).choices, 4);
  // Each further choice finds the prompt's 62 whole 16-token blocks its first choice computed.
  assert.equal(report.engine.prefix_hit_tokens, 100 * 3 * 992);
  for (const o of outcomes) {
    assert.equal(o.outputTokens, 4 * 32, o.id);
    assert.equal(o.longestChoiceTokens, 32, o.id);
    const tpot = tpotMs(o);
    assert.ok(tpot !== undefined && o.e2eMs !== undefined && o.ttftMs !== undefined);
    assert.equal(tpot, (o.e2eMs - o.ttftMs) / 31);
  }
  // A step's time, not a quarter of one: the choices decode side by side.
  assert.ok(
    Math.abs(report.latency_ms.tpot.p50 / report.latency_ms.itl.p50 - 1) < 0.2,
    `TPOT ${report.latency_ms.tpot.p50} ms, ITL ${report.latency_ms.itl.p50} ms`,
  );
  assert.equal(report.engine.kv_used_blocks_at_end, 0);
  const admitted = decisions.filter((d) => d.admission.result === 'admit');
  assert.equal(admitted.length, 100);
  for (const d of admitted) assert.equal(d.choices, 4);
  assert.equal(deterministicPart(report), deterministicPart(observed(groups).report));
});

test('n choices against n requests of their own: the same replies for a quarter of the prompt work', () => {
  const together = run({ ...groups, rate: 2 });
  const apart = run({ ...groups, choices: undefined, numRequests: 400, rate: 8 });
  assert.equal(together.completed * 4, apart.completed);
  const replyTokens = (r: typeof apart) => r.throughput.output_tokens_per_s * r.duration_s;
  assert.ok(Math.abs(replyTokens(together) / replyTokens(apart) - 1) < 0.01);
  /** Prompt tokens the engines computed: every sequence's prompt, less what the cache held. */
  const computed = (r: typeof apart) => {
    const { prefix_hit_tokens: hits, prefix_hit_rate: rate } = r.engine;
    return rate === 0 ? r.offered.input_tokens : Math.round(hits / rate) - hits;
  };
  // Separate requests share nothing (their prompts are their own); a request's choices share
  // all but the prompt's last partial block, 8 tokens, which each computes.
  assert.equal(computed(apart), 400 * 1000);
  assert.equal(computed(together), 100 * (1000 + 3 * 8));
  assert.ok(together.engine.steps < apart.engine.steps);
});

test('n choices under a V0 engine version are refused naming --n', () => {
  for (const engineVersion of ['vllm-0.6', 'vllm-0.4']) {
    assert.throws(
      () => run({ ...groups, engineVersion }),
      (e: unknown) =>
        e instanceof ConfigError && /--n/.test(e.message) && /vllm-v1/.test(e.message),
    );
  }
});

test('a group failure ends the choices under way, counted, their KV freed', () => {
  const r = run({
    numRequests: 300,
    rate: 6,
    input: 'fixed:500',
    output: 'fixed:400',
    choices: 3,
    replicas: 2,
    failGroupAtS: [20],
  });
  const failures = r.fleet.failures;
  assert.ok(failures !== undefined);
  assert.ok((failures.streams_lost ?? 0) > 0, JSON.stringify(failures));
  assert.equal(failures.streams_resumed, 0);
  assert.equal(r.fail_reasons.replica_lost, failures.streams_lost);
  assert.equal(r.completed + r.failed + r.cancelled + r.admission.rejected, 300);
  assert.equal(r.engine.kv_used_blocks_at_end, 0);
});

test('native traces carry n per row; --n fills the rows that do not; a bad n is refused naming line and field', () => {
  const dir = tempDir('choices');
  const file = join(dir, 'groups.jsonl');
  const rows = [
    { t_ms: 0, input_tokens: 800, output_tokens: 20, n: 4 },
    { t_ms: 5_000, input_tokens: 800, output_tokens: 20 },
  ];
  writeFileSync(file, rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
  const asked = (spec: Partial<ScenarioSpec>) =>
    observed({ trace: file, ...spec }).outcomes.map((o) => o.outputTokens);
  assert.deepEqual(asked({}), [80, 20]);
  assert.deepEqual(asked({ choices: 2 }), [80, 40]);
  assert.throws(
    () => run({ trace: file, engineVersion: 'vllm-0.6' }),
    (e: unknown) =>
      e instanceof ConfigError && /--engine-version: expected vllm-v1 .* n up to 4/.test(e.message),
  );
  const bad = join(dir, 'bad.jsonl');
  writeFileSync(bad, `${JSON.stringify({ ...rows[0], n: 129 })}\n`);
  assert.throws(() => run({ trace: bad }), /bad\.jsonl:1: n: expected an integer from 1 to 128/);
});

test('past capacity, admission keeps its promise to requests of 8 choices: what it admits is served in time', () => {
  // 6 groups of 8 a second of Sarathi's ShareGPT lengths on 2 replicas: about twice capacity.
  const r = run(
    {
      replicas: 2,
      input: 'sharegpt-sarathi',
      output: 'sharegpt-sarathi',
      rate: 6,
      numRequests: 1_000,
      choices: 8,
      seed: 3,
    },
    'goodput',
  );
  assert.ok(r.admission.rejected > 300, `${r.admission.rejected} refused`);
  // Each choice is judged as the stream its client reads; a stall's risk counts every choice it
  // reaches; the wait counts the seats all 8 take. Without these, 96.3% (15 token-gap misses).
  assert.ok(r.slo.attainment_admitted >= 0.99, `${r.slo.attainment_admitted} over admitted`);
});
