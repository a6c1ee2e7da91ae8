// Disaggregated serving against aggregated replicas, under the goodput policy and autoscaler:
// the Azure 2023 code and conversation traces re-timed to `--scenario diurnal-burst`, llama-3-8b
// on H100, groups ready 120–240 s after they are requested. Aggregated: 2–16 groups. Split: a
// decode pool of 1–8 and a prefill pool of 1–8, each scaled on its own signals, the prompts' KV
// crossing a 400 Gb/s link per GPU. Then a static comparison at four GPUs on long prompts, under
// the baseline policy (every request sent on at once) and the goodput one.
// Usage: node bench/disaggregated.ts [--seeds 1,2,3]
import { cpus } from 'node:os';
import { join } from 'node:path';
import { DATA_DIR, flag } from './bench-args.ts';
import { runScenario, SCENARIO_DEFAULTS, type ScenarioSpec } from '../src/sim/scenario.ts';
import { presetPolicy } from '../src/core/config/presets.ts';
import type { Report } from '../src/core/observe/report.ts';

const seeds = (flag('--seeds') ?? '1,2,3').split(',').map(Number);
const TRACES = ['code', 'conv'].map((t) => ({
  name: t,
  trace: join(DATA_DIR, `traces/azure2023/AzureLLMInferenceTrace_${t}.csv`),
}));
const FLEETS: readonly { readonly name: string; readonly spec: Partial<ScenarioSpec> }[] = [
  { name: 'aggregated 2–16', spec: { minReplicas: 2, maxReplicas: 16 } },
  {
    name: 'prefill 1–8 + decode 1–8',
    spec: { minReplicas: 1, maxReplicas: 8, prefillReplicas: 1, prefillMaxReplicas: 8 },
  },
];

function run(spec: Partial<ScenarioSpec>, policy: string, seed: number): Report {
  return runScenario({ ...SCENARIO_DEFAULTS, seed, ...spec }, presetPolicy(policy), {
    wallClock: { now: () => performance.now() },
  });
}

const pct = (x: number) => `${(100 * x).toFixed(2)}%`;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const fixed = (xs: number[], d: number) => mean(xs).toFixed(d);
console.log(`machine: ${cpus()[0]?.model} × ${cpus().length}, node ${process.version}`);
console.log(`seeds ${seeds.join(', ')}; diurnal-burst, ready time 120–240 s, goodput policy\n`);
console.log(
  '| trace | fleet | attainment | GPU-s per good request | groups ready (mean) | ITL p99 | TTFT p99 | reversals in window |',
);
console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const { name, trace } of TRACES) {
  for (const fleet of FLEETS) {
    const reports = seeds.map((seed) =>
      run(
        {
          trace,
          scenario: 'diurnal-burst',
          autoscaler: 'goodput',
          readyTime: '120-240',
          ...fleet.spec,
        },
        'goodput',
        seed,
      ),
    );
    const ready = reports.map(
      (r) => r.fleet.replicas_ready_mean + (r.fleet.prefill?.replicas_ready_mean ?? 0),
    );
    const reversals = reports.map((r) => {
      const a = r.autoscale as {
        reversals_in_window: number;
        prefill?: { reversals_in_window: number };
      };
      return a.reversals_in_window + (a.prefill?.reversals_in_window ?? 0);
    });
    console.log(
      `| ${name} | ${fleet.name} | ${pct(mean(reports.map((r) => r.slo.attainment_offered)))} | ${fixed(
        reports.map((r) => r.cost.gpu_seconds_per_good_request ?? NaN),
        3,
      )} | ${fixed(ready, 2)} | ${fixed(
        reports.map((r) => r.latency_ms.itl.p99),
        1,
      )} ms | ${fixed(
        reports.map((r) => r.latency_ms.ttft.p99),
        0,
      )} ms | ${Math.max(...reversals)} |`,
    );
  }
}

console.log(
  '\nFour H100s, 24 req/s of 1.5K–3K-token prompts and 100–400 output tokens, interactive:\n',
);
console.log('| policy | fleet | attainment | ITL p99 | TTFT p50 | KV transfer (mean) |');
console.log('| --- | --- | ---: | ---: | ---: | ---: |');
const longPrompts: Partial<ScenarioSpec> = {
  rate: 24,
  numRequests: 3_000,
  input: 'uniform:1500:3000',
  output: 'uniform:100:400',
  classes: 'interactive:1',
};
for (const policy of ['baseline-vllm', 'goodput']) {
  for (const [fleet, spec] of [
    ['4 aggregated', { replicas: 4 }],
    ['2 prefill + 2 decode', { replicas: 2, prefillReplicas: 2 }],
    ['1 prefill + 3 decode', { replicas: 3, prefillReplicas: 1 }],
  ] as const) {
    const reports = seeds.map((seed) => run({ ...longPrompts, ...spec }, policy, seed));
    const transfer = reports.map((r) => r.fleet.prefill?.kv_transfer_ms_mean ?? NaN);
    console.log(
      `| ${policy} | ${fleet} | ${pct(mean(reports.map((r) => r.slo.attainment_offered)))} | ${fixed(
        reports.map((r) => r.latency_ms.itl.p99),
        1,
      )} ms | ${fixed(
        reports.map((r) => r.latency_ms.ttft.p50),
        0,
      )} ms | ${Number.isNaN(transfer[0]) ? '—' : `${fixed(transfer, 1)} ms`} |`,
    );
  }
}
