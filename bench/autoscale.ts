// Autoscaling on the Azure conversation trace re-timed to `--scenario diurnal-burst` (a diurnal
// ramp 0.5×–1.5× and a 3× burst of 10 minutes from 45% of the trace), llama-3-8b on H100, groups
// ready 120–240 s after they are requested, 2–16 groups. Each autoscaler side by side, under the
// goodput policy and under the baseline one (admit all, dispatch at once, round-robin).
// "burst" is good completions over arrivals in the ticks of the burst's 10 minutes.
// Usage: node bench/autoscale.ts [--trace FILE] [--seeds 1,2,3]
import { cpus } from 'node:os';
import { join } from 'node:path';
import { DATA_DIR, flag } from './bench-args.ts';
import { runScenario, SCENARIO_DEFAULTS } from '../src/sim/scenario.ts';
import { presetPolicy } from '../src/core/config/presets.ts';
import type { Report } from '../src/core/observe/report.ts';

const trace = flag('--trace') ?? join(DATA_DIR, 'traces/azure2023/AzureLLMInferenceTrace_conv.csv');
const seeds = (flag('--seeds') ?? '1,2,3').split(',').map(Number);
// The goodput controller at its default headroom and at two an operator might plan for.
const AUTOSCALERS: readonly { readonly type: string; readonly headroom?: number }[] = [
  { type: 'goodput' },
  { type: 'goodput', headroom: 2 },
  { type: 'goodput', headroom: 3 },
  { type: 'goodput', headroom: 4 },
  { type: 'hpa-utilization' },
  { type: 'keda-queue' },
  { type: 'kpa-like' },
  { type: 'none' },
];

interface Timeline {
  t_s: number;
  arrival_rps: number;
  good_rps: number;
}

function run(autoscaler: (typeof AUTOSCALERS)[number], policy: string, seed: number): Report {
  return runScenario(
    {
      ...SCENARIO_DEFAULTS,
      seed,
      trace,
      scenario: 'diurnal-burst',
      autoscaler: autoscaler.type,
      headroom: autoscaler.headroom,
      minReplicas: 2,
      maxReplicas: 16,
      readyTime: '120-240',
    },
    presetPolicy(policy),
    { wallClock: { now: () => performance.now() } },
  );
}

const pct = (x: number) => `${(100 * x).toFixed(2)}%`;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
console.log(`machine: ${cpus()[0]?.model} × ${cpus().length}, node ${process.version}`);
console.log(
  `${trace} under diurnal-burst, ready time 120–240 s, 2–16 groups, seeds ${seeds.join(', ')}\n`,
);
console.log(
  '| policy | autoscaler | attainment | in the burst | GPU-s per good request | groups ready (mean) | scale events | reversals in window | lost in scale-in |',
);
console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const policy of ['goodput', 'baseline-vllm']) {
  for (const autoscaler of AUTOSCALERS) {
    const reports = seeds.map((seed) => run(autoscaler, policy, seed));
    const burst = reports.map((r) => {
      const a = r.autoscale as { timeline: Timeline[] };
      const workload = (r.scenario as { workload: { scenario: { burstAtS: number } } }).workload;
      const from = workload.scenario.burstAtS;
      const ticks = a.timeline.filter((t) => t.t_s >= from && t.t_s < from + 600);
      const arrived = ticks.reduce((n, t) => n + t.arrival_rps, 0);
      return arrived > 0 ? ticks.reduce((n, t) => n + t.good_rps, 0) / arrived : NaN;
    });
    const a = reports.map((r) => r.autoscale as Record<string, number>);
    console.log(
      `| ${policy} | ${autoscaler.type}${autoscaler.headroom === undefined ? '' : ` (headroom ${autoscaler.headroom})`} | ${pct(mean(reports.map((r) => r.slo.attainment_offered)))} | ${pct(mean(burst))} | ${mean(reports.map((r) => r.cost.gpu_seconds_per_good_request ?? NaN)).toFixed(3)} | ${mean(reports.map((r) => r.fleet.replicas_ready_mean)).toFixed(2)} | ${mean(a.map((x) => x.scale_events)).toFixed(1)} | ${Math.max(...a.map((x) => x.reversals_in_window))} | ${Math.max(...a.map((x) => x.lost_in_scale_in))} |`,
    );
  }
}
