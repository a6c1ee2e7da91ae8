// Long prompts under load, in the simulator: how many are admitted, refused and expired after
// admission, and how their predicted waits compare with the waits they had — beside the good
// requests a second of the whole run. A long prompt is one whose prefill alone takes more than
// 90% of a step's gap budget (54 ms of the interactive class's 80 ms gap on llama-3-8b/h100:
// prompts over ~1,900 tokens); it waits for a replica whose streams can absorb its stall, or,
// staged (`dispatch.params.staged_prefill`, the simulator's host can), goes in pieces.
// Setups, `goodput` with every request `interactive`: Sarathi's ShareGPT lengths at 48 req/s on
// two replicas (a cold start: the first long prompts go to idle replicas); the Azure 2023
// conversation trace at 8× with Gamma arrivals (burstiness 0.1); the code trace at 16×; and the
// conversation trace at 1.5× the admission bench's capacity on four replicas. `--code DIR` runs
// another checkout's code (its own src/), to set a change beside the code before it.
// Usage: node bench/long-prompts.ts [--data ../shared/data] [--code DIR]
import { resolve } from 'node:path';
import { DATA_DIR, REPO_ROOT, flag } from './bench-args.ts';
import type { Report } from '../src/core/observe/report.ts';
import type { DecisionRecord } from '../src/core/observe/decision-record.ts';
import { percentileSorted } from '../src/core/stats/percentile.ts';

const code = resolve(flag('--code') ?? REPO_ROOT);
const { runScenario, SCENARIO_DEFAULTS } = await import(resolve(code, 'src/sim/scenario.ts'));
const { loadPolicy } = await import(resolve(code, 'src/sim/policy-source.ts'));

const trace = (name: string) => `${DATA_DIR}/traces/azure2023/AzureLLMInferenceTrace_${name}.csv`;
/** The interactive class's long-prompt line on llama-3-8b/h100: 90% of 60 ms. */
const LONG_PREFILL_MS = 54;
const setups = [
  {
    label: 'Sarathi ShareGPT, 48 req/s, 2 replicas, 250 s',
    spec: { seed: 3, replicas: 2, input: 'sharegpt-sarathi', output: 'sharegpt-sarathi' },
    more: { rate: 48, numRequests: 12_000 },
  },
  {
    label: 'conversation ×8, Gamma 0.1, 2 replicas',
    spec: { seed: 3, replicas: 2, trace: trace('conv'), durationS: 1200 },
    more: { rateScale: 8, arrival: 'gamma', burstiness: 0.1 },
  },
  {
    label: 'code ×16, 2 replicas',
    spec: { seed: 3, replicas: 2, trace: trace('code') },
    more: { rateScale: 16 },
  },
  {
    label: 'conversation ×4.56 (1.5× capacity), 4 replicas',
    spec: { seed: 1, replicas: 4, trace: trace('conv') },
    more: { rateScale: 4.5645 },
  },
];

console.log(`code: ${code}\n`);
console.log(
  '| setup | good req/s | attainment over admitted | long prompts admitted | refused (attempts) | expired after admission | their wait ÷ predicted, p50 / p90 |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|');
for (const s of setups) {
  const long = { admitted: 0, refused: 0, expired: 0 };
  const ratios: number[] = [];
  const onDecision = (d: DecisionRecord) => {
    if (d.demand === null || d.demand.prefill_ms <= LONG_PREFILL_MS) return;
    const result = d.admission.result;
    if (result === 'reject') long.refused++;
    else if (result === 'admit' || result === 'expire') {
      if (result === 'expire') long.expired++;
      else long.admitted++;
      const predicted = d.admission.predicted_wait_ms;
      if (predicted !== null && predicted >= 20 && d.waited_ms !== null) {
        ratios.push(d.waited_ms / predicted);
      }
    }
  };
  const r: Report = runScenario(
    { ...SCENARIO_DEFAULTS, classes: 'interactive', ...s.spec, ...s.more },
    loadPolicy('goodput'),
    { wallClock: { now: () => performance.now() }, onDecision },
  );
  ratios.sort((a, b) => a - b);
  const q = (p: number) => (ratios.length === 0 ? '–' : percentileSorted(ratios, p).toFixed(2));
  console.log(
    `| ${s.label} | ${r.goodput.requests_per_s.toFixed(2)} | ${(100 * r.slo.attainment_admitted).toFixed(2)}% | ` +
      `${long.admitted + long.expired} | ${long.refused} | ${long.expired} | ${q(50)} / ${q(90)} |`,
  );
}
