// Admission at deep overload, in the simulator: does an admitted request stay a served one?
// `goodput` on 2 × llama-3-8b/h100, every request `interactive` (TTFT ≤ 2 s, p99 token gap
// ≤ 80 ms), seed 3:
//   - the Azure 2023 conversation trace, first 1,200 s, at rate scales 4, 8, 16 and 32, and at
//     8 re-timed by Gamma arrivals of burstiness 0.5, 0.2 and 0.1;
//   - the Azure 2023 code trace (long prompts, short answers), whole, at rate scales 1–16, and
//     at 4 re-timed by Gamma arrivals of burstiness 0.2;
//   - bursts of N requests in one instant (conversation-like lengths: exponential, means 1,155
//     in and 211 out);
//   - a cold start into 20 s of Gamma (burstiness 0.2) arrivals of 40-token prompts and
//     500–2,500-token replies, at 200 and 1,130 requests/s, and of 100 requests/s with
//     exponential replies of mean 1,500 tokens (seeds 1–3).
// Per run: good requests/s, attainment over offered and over admitted, refused, expired after
// admission, admitted misses by kind, and the TTFT prediction error (actual − predicted).
// Usage: node bench/overload.ts [--data ../shared/data] [--policy NAME|FILE] [--json FILE]
import { writeFileSync } from 'node:fs';
import { DATA_DIR, flag } from './bench-args.ts';
import { runScenario, SCENARIO_DEFAULTS, type ScenarioSpec } from '../src/sim/scenario.ts';
import { loadPolicy } from '../src/sim/policy-source.ts';
import type { Report } from '../src/core/observe/report.ts';

const conv = `${DATA_DIR}/traces/azure2023/AzureLLMInferenceTrace_conv.csv`;
const code = `${DATA_DIR}/traces/azure2023/AzureLLMInferenceTrace_code.csv`;
const base: ScenarioSpec = {
  ...SCENARIO_DEFAULTS,
  seed: 3,
  replicas: 2,
  classes: 'interactive',
};

interface Run {
  readonly set: string;
  readonly label: string;
  readonly spec: Partial<ScenarioSpec>;
}

const runs: Run[] = [
  ...[4, 8, 16, 32].map((rateScale) => ({
    set: 'conversation',
    label: `×${rateScale}`,
    spec: { trace: conv, durationS: 1200, rateScale },
  })),
  ...[0.5, 0.2, 0.1].map((burstiness) => ({
    set: 'conversation',
    label: `×8, Gamma ${burstiness}`,
    spec: { trace: conv, durationS: 1200, rateScale: 8, arrival: 'gamma' as const, burstiness },
  })),
  ...[1, 2, 4, 8, 16].map((rateScale) => ({
    set: 'code',
    label: `×${rateScale}`,
    spec: { trace: code, rateScale },
  })),
  {
    set: 'code',
    label: '×4, Gamma 0.2',
    spec: { trace: code, rateScale: 4, arrival: 'gamma', burstiness: 0.2 },
  },
  ...[300, 3000].map((numRequests) => ({
    set: 'instant burst',
    label: `${numRequests.toLocaleString('en-US')} at once`,
    spec: { rate: Infinity, numRequests, input: 'exp:1155', output: 'exp:211' },
  })),
  // A cold start into a flood of long replies: nothing ends for the first ten seconds.
  ...[200, 1130].map((rate) => ({
    set: 'long replies',
    label: `${rate.toLocaleString('en-US')} req/s, Gamma 0.2`,
    spec: {
      rate,
      numRequests: 20 * rate,
      arrival: 'gamma' as const,
      burstiness: 0.2,
      input: 'fixed:40',
      output: 'uniform:500:2500',
    },
  })),
  // Heavy-tailed replies (exponential, mean 1,500): the first to end are the short tail.
  ...[1, 2, 3].map((seed) => ({
    set: 'heavy-tailed replies',
    label: `100 req/s, Gamma 0.2, seed ${seed}`,
    spec: {
      seed,
      rate: 100,
      numRequests: 8_000,
      arrival: 'gamma' as const,
      burstiness: 0.2,
      input: 'fixed:40',
      output: 'exp:1500',
    },
  })),
];

const policy = loadPolicy(flag('--policy') ?? 'goodput');
const wallClock = { now: () => performance.now() };
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const ms = (x: number) => Math.round(x).toLocaleString('en-US');

console.log(
  '| workload | load | good req/s | attainment offered | **admitted** | refused | expired after admission | admitted misses | TTFT error p50 / p90 / p99 (ms) |',
);
console.log('|---|---|---:|---:|---:|---:|---:|---|---:|');
const results: unknown[] = [];
for (const run of runs) {
  const r: Report = runScenario({ ...base, ...run.spec }, policy, { wallClock });
  const e = (r.estimate as { ttft: { error_ms: Record<string, number> } }).ttft.error_ms;
  const misses = r.slo.by_class.interactive?.admitted_misses ?? {};
  console.log(
    `| ${run.set} | ${run.label} | ${r.goodput.requests_per_s.toFixed(1)} | ` +
      `${pct(r.slo.attainment_offered)} | **${pct(r.slo.attainment_admitted)}** | ` +
      `${r.admission.rejected.toLocaleString('en-US')} | ${r.admission.expired_after_admission} | ` +
      `${JSON.stringify(misses)} | ${ms(e.p50)} / ${ms(e.p90)} / ${ms(e.p99)} |`,
  );
  results.push({
    set: run.set,
    label: run.label,
    spec: run.spec,
    goodRps: r.goodput.requests_per_s,
    attainmentOffered: r.slo.attainment_offered,
    attainmentAdmitted: r.slo.attainment_admitted,
    rejected: r.admission.rejected,
    expired: r.admission.expired_after_admission,
    misses,
    ttftErrorMs: e,
  });
}
const out = flag('--json');
if (out !== undefined) writeFileSync(out, JSON.stringify(results, null, 2));
