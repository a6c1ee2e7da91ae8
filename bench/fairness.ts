// Tenant isolation under overload: one llama-3-8b/h100 replica, interactive sharegpt-vllm
// requests at 2× its SLO capacity (~55 req/s), queued by virtual token counters (`vtc`, the
// goodput preset's default), by the weighted candidate score (`scored`, default weights) or
// FIFO, beside the `baseline-vllm` preset. Two scenarios:
//   two tenants  — tenant-0 sends ~95% of requests with weight 1, tenant-1 ~5% with weight 4.26,
//                  so tenant-0 offers 10× its fair share;
//   zipf:24:1.2  — 24 tenants of equal weight with Zipf-skewed sizes; a tenant is under its fair
//                  share when it offers less than capacity / 24 (under 1/48 of all requests).
// `--warm`: each goodput run starts from the state (learned output lengths) of the same tenants
// served calmly first (20 req/s, 3,000 requests), as a gateway restarted with --learned-state
// does; without it, each starts cold.
// Usage: node bench/fairness.ts [--seeds 1,2,3] [--rate 110] [--num-requests 6000] [--warm]
import { flag } from './bench-args.ts';
import { runScenario, SCENARIO_DEFAULTS } from '../src/sim/scenario.ts';
import { resolvePolicy } from '../src/core/config/policy.ts';
import { PRESETS } from '../src/core/config/presets.ts';
import type { Report } from '../src/core/observe/report.ts';
import { cpus } from 'node:os';
import type { Learned } from '../src/core/estimate/learned.ts';
import {
  learnedStateText,
  parseLearnedState,
  restoreLearned,
  type LearnedState,
} from '../src/core/estimate/learned-state.ts';

const seeds = (flag('--seeds') ?? '1,2,3').split(',').map(Number);
const rate = Number(flag('--rate') ?? 110);
const numRequests = Number(flag('--num-requests') ?? 6_000);
const WARM = process.argv.includes('--warm');

const SCENARIOS = {
  'two tenants': {
    tenants: 'zipf:2:4.25',
    weights: { 'tenant-0': { weight: 1 }, 'tenant-1': { weight: 4.26 } },
  },
  'zipf:24:1.2': { tenants: 'zipf:24:1.2', weights: { '*': { weight: 1 } } },
} as const;

type Variant = 'goodput vtc' | 'goodput scored' | 'goodput fifo' | 'baseline-vllm';
const VARIANTS: Variant[] = ['goodput vtc', 'goodput scored', 'goodput fifo', 'baseline-vllm'];

function run(variant: Variant, scenario: keyof typeof SCENARIOS, seed: number): Report {
  const s = SCENARIOS[scenario];
  const base = variant === 'baseline-vllm' ? PRESETS['baseline-vllm'] : PRESETS.goodput;
  const policy = resolvePolicy({
    ...base,
    queueing: {
      order: variant === 'goodput fifo' ? 'fifo' : variant === 'goodput scored' ? 'scored' : 'vtc',
    },
    tenants: s.weights,
  });
  const spec = {
    ...SCENARIO_DEFAULTS,
    seed,
    rate,
    numRequests,
    tenants: s.tenants,
    classes: 'interactive',
    input: 'sharegpt-vllm',
    output: 'sharegpt-vllm',
  };
  const wallClock = { now: () => performance.now() };
  let from: LearnedState | undefined;
  if (WARM && variant !== 'baseline-vllm') {
    let taught: Learned | undefined;
    const calm = { ...spec, seed: seed + 100, rate: 20, numRequests: 3_000 };
    runScenario(calm, policy, { wallClock, withLearned: (l) => (taught = l) });
    from = parseLearnedState(learnedStateText(taught as Learned, 0));
  }
  return runScenario(spec, policy, {
    wallClock,
    withLearned: (l) => from !== undefined && restoreLearned(l, from),
  });
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
console.log(`machine: ${cpus()[0]?.model} × ${cpus().length}, node ${process.version}`);
console.log(
  `rate ${rate} req/s, ${numRequests} requests, seeds ${seeds.join(', ')}, ` +
    `${WARM ? 'from learned state (--warm)' : 'cold'}\n`,
);
console.log(
  '| scenario | seed | policy | good req/s | attainment offered / admitted | protected tenants: min attainment | heaviest tenant attainment | Jain | max queue wait |',
);
console.log('| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const scenario of Object.keys(SCENARIOS) as (keyof typeof SCENARIOS)[]) {
  for (const seed of seeds) {
    for (const variant of VARIANTS) {
      const r = run(variant, scenario, seed);
      const tenants = Object.entries(r.tenants);
      const total = tenants.reduce((n, [, t]) => n + t.requests, 0);
      // Protected: the light tenant, or every tenant under its fair share of capacity.
      const isProtected =
        scenario === 'two tenants'
          ? (name: string) => name === 'tenant-1'
          : (name: string) => (r.tenants[name].requests / total) * (rate / 55) < 1 / tenants.length;
      const shielded = tenants.filter(([n]) => isProtected(n));
      const minProtected = Math.min(...shielded.map(([, t]) => t.attainment));
      const heaviest = tenants.reduce((a, b) => (b[1].requests > a[1].requests ? b : a));
      console.log(
        `| ${scenario} | ${seed} | ${variant} | ${r.goodput.requests_per_s.toFixed(2)} | ${pct(r.slo.attainment_offered)} / ${pct(r.slo.attainment_admitted)} | ${pct(minProtected)} (${shielded.length}) | ${pct(heaviest[1].attainment)} | ${r.fairness.jain_index.toFixed(3)} | ${(r.fairness.max_queue_wait_ms.interactive ?? 0).toFixed(0)} ms |`,
      );
    }
  }
}
