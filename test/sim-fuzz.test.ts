// Whole simulations with options drawn at random — policy, engine version and iteration options,
// small KV, tool calls, LoRA adapters, shared prefixes, several choices, P/D pools, autoscalers,
// group failures, client timeouts and retries, tenants and classes — each held to the bookkeeping
// every run must keep: every offered request ends in exactly one state, none is left running,
// every KV block is free at the end, and the same seed gives the same report. A combination the
// scenario refuses (a ConfigError naming it) is skipped and counted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError } from '../src/core/errors.ts';
import { SeededRng } from '../src/runtime/seeded-rng.ts';
import type { ScenarioSpec } from '../src/sim/scenario.ts';
import { deterministicPart, run } from './helpers.ts';

/** Random scenarios per run; `SIM_FUZZ_SEEDS=2000` searches deeper. */
const SEEDS = Number(process.env.SIM_FUZZ_SEEDS ?? 40);

function pick<T>(rng: SeededRng, options: readonly T[]): T {
  return options[Math.floor(rng.next() * options.length)];
}

function randomSpec(rng: SeededRng): { spec: Partial<ScenarioSpec>; policy: string } {
  const maybe = <T extends object>(p: number, value: T): T | object =>
    rng.next() < p ? value : {};
  const priority = rng.next() < 0.3;
  const spec0: Partial<ScenarioSpec> = maybe(0.3, {
    toolCalls: pick(rng, ['1:200:50', '2:500:200']),
    toolKv: pick(rng, ['auto', 'keep', 'swap', 'drop'] as const),
  });
  const spec: Partial<ScenarioSpec> = {
    numRequests: 150,
    rate: pick(rng, [5, 20, 60]),
    replicas: pick(rng, [1, 2, 3]),
    input: pick(rng, ['uniform:50:2000', 'sharegpt-vllm', 'fixed:500']),
    output: pick(rng, ['uniform:1:300', 'sharegpt-vllm', 'fixed:64']),
    engineVersion: pick(rng, ['vllm-v1', 'vllm-0.6', 'vllm-0.4']),
    preemption: pick(rng, ['recompute', 'swap', 'auto'] as const),
    // With its context within the cache, as vLLM requires to start.
    ...maybe(0.5, { kvBlocks: pick(rng, [400, 1_000, 3_000]), maxModelLen: 6_400 }),
    ...maybe(0.3, { maxNumSeqs: pick(rng, [4, 16, 64]) }),
    ...(priority
      ? { schedulingPolicy: 'priority' as const, ...maybe(0.5, { ttftBoostMs: 200 }) }
      : {}),
    ...maybe(0.2, { decodeTokenBudget: 8 }),
    ...maybe(0.2, { preemptionVictims: 'slack' as const }),
    ...spec0,
    ...maybe(0.2, { adapters: 'zipf:3:1.0', maxLoras: pick(rng, [1, 2]) }),
    // A prefix workload brings its own shapes: no tool calls with it.
    ...(spec0.toolCalls === undefined ? maybe(0.2, { prefix: pick(rng, ['mix', 'chat:1']) }) : {}),
    ...maybe(0.2, { prefillReplicas: 1 }),
    // Several choices of each prompt: V1 only (a V0 version is refused, and skipped).
    ...maybe(0.2, { choices: pick(rng, [2, 5]) }),
    ...maybe(0.2, { autoscaler: pick(rng, ['goodput', 'hpa-utilization']), readyTime: '5' }),
    ...maybe(0.15, { failGroupAtS: [3] }),
    ...maybe(0.3, {
      clientTimeoutMs: pick(rng, [2_000, 8_000]),
      maxAttempts: pick(rng, [1, 3]),
      retryMode: pick(rng, ['disciplined', 'naive'] as const),
    }),
    ...maybe(0.4, {
      tenants: 'zipf:3:1.2',
      classes: 'interactive:0.5,batch:0.3,best_effort:0.2',
    }),
  };
  const policy = pick(rng, ['baseline-vllm', 'least-request', 'goodput']);
  return { spec, policy };
}

test(`${SEEDS} random whole simulations: every request ends once, KV is freed, the seed repeats the report`, () => {
  let ran = 0;
  for (let seed = 1; seed <= SEEDS; seed++) {
    const rng = new SeededRng(seed, 'sim-fuzz');
    const { spec, policy } = randomSpec(rng);
    const where = `seed ${seed}, ${policy}: ${JSON.stringify(spec)}`;
    let report;
    try {
      report = run({ ...spec, seed }, policy);
    } catch (e) {
      if (e instanceof ConfigError) continue;
      throw new Error(`${where}: ${(e as Error).message}`, { cause: e });
    }
    ran++;
    const r = report;
    assert.equal(
      r.completed + r.failed + r.cancelled + r.admission.rejected + r.running,
      r.offered.requests,
      where,
    );
    assert.equal(r.running, 0, `${where}: requests left running`);
    assert.equal(r.engine.kv_used_blocks_at_end, 0, `${where}: KV blocks leaked`);
    if (seed % 5 === 0) {
      assert.equal(deterministicPart(run({ ...spec, seed }, policy)), deterministicPart(r), where);
    }
  }
  // Most combinations are valid: the fuzz is not skipping its way to green.
  assert.ok(ran >= SEEDS * 0.6, `only ${ran} of ${SEEDS} scenarios ran`);
});
