// Replicas slower than the profile the control plane plans with, in the simulator: does flow
// control's measured pace (src/core/routing/step-pace.ts) keep admitted streams within their
// token-gap objective? `goodput` on 2 × llama-3-8b/h100, every request `interactive` (TTFT ≤ 2 s,
// p99 token gap ≤ 80 ms), the Azure 2023 conversation trace's first 1,200 s, seed 3; the
// replicas run `--slowdown` 1, 1.5 and 2 × their profile's step time, which the control plane is
// not told, at rate scales 2 and 8, with the pace measured (the default) and without it
// (`dispatch.params.pace: false`).
// Per run: good requests/s, attainment over offered and over admitted, admitted requests that
// missed their token gap, refused, expired after admission.
// Usage: node bench/slow-replicas.ts [--data ../shared/data] [--json FILE]
import { writeFileSync } from 'node:fs';
import { DATA_DIR, flag } from './bench-args.ts';
import { runScenario, SCENARIO_DEFAULTS, type ScenarioSpec } from '../src/sim/scenario.ts';
import { loadPolicy } from '../src/sim/policy-source.ts';
import type { ResolvedPolicy } from '../src/core/config/policy.ts';

const base: ScenarioSpec = {
  ...SCENARIO_DEFAULTS,
  seed: 3,
  replicas: 2,
  classes: 'interactive',
  trace: `${DATA_DIR}/traces/azure2023/AzureLLMInferenceTrace_conv.csv`,
  durationS: 1200,
};

const measured = loadPolicy('goodput');
if (measured.dispatch.type !== 'flow-control')
  throw new Error('goodput dispatches under flow control');
const trusted: ResolvedPolicy = { ...measured, dispatch: { ...measured.dispatch, pace: null } };

const wallClock = { now: () => performance.now() };
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

console.log(
  '| slowdown | load | pace | good req/s | attainment offered | **admitted** | admitted, token gap missed | refused | expired after admission |',
);
console.log('|---:|---|---|---:|---:|---:|---:|---:|---:|');
const results: unknown[] = [];
for (const slowdown of [1, 1.5, 2]) {
  for (const rateScale of [2, 8]) {
    for (const [pace, policy] of [
      ['measured', measured],
      ['profile trusted', trusted],
    ] as const) {
      const spec = { ...base, rateScale, ...(slowdown === 1 ? {} : { slowdown }) };
      const r = runScenario(spec, policy, { wallClock });
      const misses = r.slo.by_class.interactive?.admitted_misses ?? {};
      const itl = (misses as Record<string, number>).itl ?? 0;
      console.log(
        `| ${slowdown}× | ×${rateScale} | ${pace} | ${r.goodput.requests_per_s.toFixed(1)} | ` +
          `${pct(r.slo.attainment_offered)} | **${pct(r.slo.attainment_admitted)}** | ` +
          `${itl.toLocaleString('en-US')} | ${r.admission.rejected.toLocaleString('en-US')} | ` +
          `${r.admission.expired_after_admission} |`,
      );
      results.push({
        slowdown,
        rateScale,
        pace,
        goodRps: r.goodput.requests_per_s,
        attainmentOffered: r.slo.attainment_offered,
        attainmentAdmitted: r.slo.attainment_admitted,
        misses,
        rejected: r.admission.rejected,
        expired: r.admission.expired_after_admission,
      });
    }
  }
}
const out = flag('--json');
if (out !== undefined) writeFileSync(out, JSON.stringify(results, null, 2));
