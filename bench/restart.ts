// A gateway restarted under load, in the simulator: cold, or from what it had learned before
// (`--learned-state`). `goodput` on 2 × llama-3-8b/h100, every request `interactive`, 40-token
// prompts, no max_tokens. First a gateway serves a calm hour's worth of each reply shape
// (Poisson, 20 req/s for half an hour: 36,000 requests, seed 7) and its learned state is kept. Then the flood
// arrives at a gateway just started: Gamma arrivals of burstiness 0.2 at 1,130 req/s, a burst of
// 3,000 (2.7 s) and 20 s of them (22,600), seed 1. Each flood runs three ways: cold (KV
// reserved for `prior_output_reserve` tokens of output until the lengths are learned), from
// the saved state, and cold with the reserve at the prior's p90 (512), the overcommit the
// reserve replaced. Per run: admitted, good, attainment over admitted, preemptions.
// Usage: npm run bench:restart [-- --json FILE]
import { writeFileSync } from 'node:fs';
import { flag } from './bench-args.ts';
import { runScenario, SCENARIO_DEFAULTS, type ScenarioSpec } from '../src/sim/scenario.ts';
import { loadPolicy } from '../src/sim/policy-source.ts';
import { resolvePolicy } from '../src/core/config/policy.ts';
import { PRESETS } from '../src/core/config/presets.ts';
import type { Learned } from '../src/core/estimate/learned.ts';
import {
  learnedStateText,
  parseLearnedState,
  restoreLearned,
  type LearnedState,
} from '../src/core/estimate/learned-state.ts';
import type { Report } from '../src/core/observe/report.ts';

const base: ScenarioSpec = {
  ...SCENARIO_DEFAULTS,
  seed: 1,
  replicas: 2,
  classes: 'interactive',
  input: 'fixed:40',
};
const policy = loadPolicy('goodput');
const overcommit = resolvePolicy({ ...PRESETS.goodput, estimate: { prior_output_reserve: 512 } });

const shapes = ['exp:211', 'sharegpt-vllm', 'sharegpt-sarathi', 'uniform:500:2500'];
const floods = [3_000, 22_600].map((numRequests) => ({
  label: numRequests === 3_000 ? 'burst of 3,000' : '20 s, 22,600',
  spec: { rate: 1130, numRequests, arrival: 'gamma' as const, burstiness: 0.2, seed: 1 },
}));

function run(spec: ScenarioSpec, p = policy, from?: LearnedState) {
  let learned: Learned | undefined;
  const report = runScenario(spec, p, {
    wallClock: { now: () => performance.now() },
    withLearned: (l) => {
      if (from !== undefined) restoreLearned(l, from);
      learned = l;
    },
  });
  return { report, learned: learned as Learned };
}

function row(r: Report) {
  return {
    admitted: r.admission.admitted,
    good: Math.round(r.slo.attainment_offered * r.offered.requests),
    attainment_admitted: r.slo.attainment_admitted,
    preemptions: r.preemption.recompute + r.preemption.swap + r.preemption.keep,
  };
}

const results = [];
for (const output of shapes) {
  const calm = run({ ...base, output, rate: 20, numRequests: 36_000, seed: 7 });
  // Through the file format, as a restarted gateway reads it.
  const saved = parseLearnedState(learnedStateText(calm.learned, 0));
  for (const flood of floods) {
    const spec = { ...base, output, ...flood.spec };
    const cold = row(run(spec).report);
    const warm = row(run(spec, policy, saved).report);
    const old = row(run(spec, overcommit).report);
    results.push({ output, flood: flood.label, cold, warm, overcommit: old });
    console.log(
      `${output.padEnd(18)} ${flood.label.padEnd(15)} good cold ${cold.good} → warm ${warm.good}` +
        ` (reserve 512: ${old.good}); admitted ${cold.admitted} → ${warm.admitted};` +
        ` attainment over admitted ${pct(cold.attainment_admitted)} → ${pct(warm.attainment_admitted)}` +
        ` (${pct(old.attainment_admitted)}); preemptions ${cold.preemptions} → ${warm.preemptions}` +
        ` (${old.preemptions})`,
    );
  }
}

function pct(x: number): string {
  return `${(100 * x).toFixed(1)}%`;
}

const json = flag('--json');
if (json !== undefined) writeFileSync(json, `${JSON.stringify(results, null, 2)}\n`);
