// A gateway restarted under load, in the simulator: cold, or from what it had learned before
// (`--learned-state`). `goodput` on 2 × llama-3-8b/h100, every request `interactive`, 40-token
// prompts, no max_tokens. First a gateway serves a calm hour's worth of each reply shape
// (Poisson, 20 req/s for half an hour: 36,000 requests, seed 7) and its learned state is kept. Then the flood
// arrives at a gateway just started: Gamma arrivals of burstiness 0.2 at 1,130 req/s, a burst of
// 3,000 (2.7 s) and 20 s of them (22,600), seed 1. Each flood runs three ways: cold (KV
// reserved for `prior_output_reserve` tokens of output until the lengths are learned), from
// the saved state, and cold with the reserve at the prior's p90 (512), the overcommit the
// reserve replaced. Per run: admitted, good, attainment over admitted, preemptions. Last, a
// gateway that never restarted: one trace of a calm half hour and a burst (exponential
// replies), its burst's good requests beside those of a restart from the state and a cold start.
// Usage: npm run bench:restart [-- --json FILE]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
import type { RequestOutcome } from '../src/core/observe/request-outcome.ts';
import { SeededRng } from '../src/runtime/seeded-rng.ts';

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

function run(
  spec: ScenarioSpec,
  p = policy,
  from?: LearnedState,
  onOutcome?: (o: RequestOutcome, good: boolean) => void,
) {
  let learned: Learned | undefined;
  const report = runScenario(spec, p, {
    wallClock: { now: () => performance.now() },
    ...(onOutcome === undefined ? {} : { onOutcome: (o, _at, good) => onOutcome(o, good) }),
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

const results: unknown[] = [];
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

// Against a gateway that never restarted: one trace of the calm half hour and then the burst
// (exponential replies, mean 211), served whole, beside its burst served by a gateway started
// cold and one started from the state the calm half hour taught.
const dir = mkdtempSync(join(tmpdir(), 'goodput-restart-'));
const traceRng = new SeededRng(5);
const lines = (n: number, gapMs: number, fromMs: number) => {
  const out: string[] = [];
  let t = fromMs;
  for (let i = 0; i < n; i++) {
    t += -gapMs * Math.log(1 - traceRng.next());
    const output = Math.max(1, Math.round(-211 * Math.log(1 - traceRng.next())));
    const at = new Date(Date.parse('2023-11-16T18:00:00Z') + t).toISOString();
    out.push(`${at.replace('T', ' ').replace('Z', '')},40,${output}`);
  }
  return { out, endMs: t };
};
const calmTrace = lines(36_000, 50, 0);
const burstTrace = lines(3_000, 1_000 / 1130, calmTrace.endMs + 1_000);
const trace = (name: string, rows: string[]) => {
  const file = join(dir, name);
  writeFileSync(file, `TIMESTAMP,ContextTokens,GeneratedTokens\n${rows.join('\n')}\n`);
  return { ...base, seed: 1, trace: file };
};
let wholeGood = 0;
run(trace('whole.csv', [...calmTrace.out, ...burstTrace.out]), policy, undefined, (o, good) => {
  if (good && Number(o.id.slice(1)) >= 36_000) wholeGood++;
});
const taught = run(trace('calm.csv', calmTrace.out)).learned;
const burst = trace('burst.csv', burstTrace.out);
const restarted = row(run(burst, policy, parseLearnedState(learnedStateText(taught, 0))).report);
const coldBurst = row(run(burst).report);
rmSync(dir, { recursive: true, force: true });
console.log(
  `never restarted (exp:211, one trace): the burst's good ${wholeGood}; after a restart from ` +
    `the state ${restarted.good}; after a cold start ${coldBurst.good}`,
);
results.push({ never_restarted: wholeGood, restarted, cold: coldBurst });

function pct(x: number): string {
  return `${(100 * x).toFixed(1)}%`;
}

const json = flag('--json');
if (json !== undefined) writeFileSync(json, `${JSON.stringify(results, null, 2)}\n`);
