// Routing on prefix-heavy workloads (`--prefix`, src/sim/workload/prefix-workload.ts): 8
// replicas of a long-context model, every router side by side in one run, three seeds each.
//
// For each mix (`mix`, the default, and an agent-heavy one):
// 1. Capacity: round-robin's SLO capacity is the highest rate on a grid at which it keeps ≥ 90%
//    SLO attainment (mean of seeds); the comparison runs at 1.5× that.
// 2. Routers alone: each under the same admit-all, dispatch-at-once policy, so only placement
//    differs. Then the whole `goodput` policy (gates, flow control) with its router swapped.
// Then:
// 3. One very hot agent preamble (`agent:1`) at round-robin's capacity: the queue-work spread
//    across replicas and the longest stretch any replica held over twice the median's.
// 4. The default mix as a Mooncake-format trace (hash_ids, 512-token blocks), replayed with
//    --trace at the same rate: the format path.
//
// Usage: node bench/routing.ts [--model llama-3.1-8b] [--tp 1] [--seeds 1,2,3]
//                              [--num-requests 3000] [--grid 6,8,10,12,14,16,18]
import { cpus, tmpdir } from 'node:os';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { flag } from './bench-args.ts';
import { runScenario, SCENARIO_DEFAULTS, type ScenarioSpec } from '../src/sim/scenario.ts';
import { resolvePolicy, type PolicyFile } from '../src/core/config/policy.ts';
import { PRESETS } from '../src/core/config/presets.ts';
import type { Report } from '../src/core/observe/report.ts';
import { buildWorkload } from '../src/sim/workload/build-workload.ts';
import { SeededRng } from '../src/runtime/seeded-rng.ts';
import { MOONCAKE_BLOCK_TOKENS } from '../src/sim/workload/trace/mooncake-format.ts';
import { PREFIX_BLOCK_TOKENS } from '../src/sim/workload/prefix-workload.ts';

const model = flag('--model') ?? 'llama-3.1-8b';
const tp = Number(flag('--tp') ?? 1);
const seeds = (flag('--seeds') ?? '1,2,3').split(',').map(Number);
const numRequests = Number(flag('--num-requests') ?? 3_000);
const grid = (flag('--grid') ?? '6,8,10,12,14,16,18').split(',').map(Number);
const ROUTER_TYPES = [
  'round-robin',
  'least-request',
  'least-kv',
  'session-hash',
  'llm-d-like',
  'sglang-cache-aware',
  'expected-completion',
];

const base = (over: Partial<ScenarioSpec>): ScenarioSpec => ({
  ...SCENARIO_DEFAULTS,
  model,
  tp,
  replicas: 8,
  numRequests,
  prefix: 'mix',
  seed: 1,
  ...over,
});

function routingOnly(type: string): PolicyFile {
  return {
    ...PRESETS['baseline-vllm'],
    name: type,
    policy_revision: `${type}@1`,
    routing: { type },
  };
}

function goodputWith(type: string): PolicyFile {
  return { ...PRESETS.goodput, name: `goodput+${type}`, routing: { type } };
}

function run(spec: ScenarioSpec, policy: PolicyFile): Report {
  return runScenario(spec, resolvePolicy(policy), { wallClock: { now: () => performance.now() } });
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

console.log(`machine: ${cpus()[0]?.model} × ${cpus().length}, node ${process.version}`);
console.log(
  `${model} tp${tp} × 8 replicas, ${numRequests} requests per run, seeds ${seeds.join(', ')}\n`,
);

/** Round-robin's SLO capacity on `prefix`: the highest grid rate it keeps ≥ 90% at. */
function capacityOf(prefix: string): number {
  let capacity = grid[0];
  for (const rate of grid) {
    const a = mean(
      seeds.map(
        (seed) =>
          run(base({ rate, seed, prefix }), routingOnly('round-robin')).slo.attainment_offered,
      ),
    );
    console.log(`round-robin, ${prefix}, ${rate} req/s: ${pct(a)} within SLO`);
    if (a >= 0.9) capacity = rate;
  }
  return capacity;
}

function table(title: string, policies: [string, PolicyFile][], over: Partial<ScenarioSpec>) {
  console.log(`\n### ${title}\n`);
  console.log(
    '| policy | good req/s (mean of seeds) | × round-robin | × best other | attainment | prefix hit rate | queue-work spread p99 | longest > 2× median |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  const rows = policies.map(([name, policy]) => {
    const reports = seeds.map((seed) => run(base({ seed, ...over }), policy));
    return {
      name,
      good: mean(reports.map((r) => r.goodput.requests_per_s)),
      att: mean(reports.map((r) => r.slo.attainment_offered)),
      hit: mean(reports.map((r) => r.routing.prefix_hit_rate)),
      spread: mean(reports.map((r) => r.routing.queue_work_spread_p99)),
      over2: Math.max(...reports.map((r) => r.routing.over_2x_longest_s)),
    };
  });
  const rr = rows.find((r) => r.name === 'round-robin')?.good ?? NaN;
  for (const row of rows) {
    const others = rows.filter((o) => o !== row && o.name !== 'round-robin');
    const best = Math.max(...others.map((o) => o.good));
    console.log(
      `| ${row.name} | ${row.good.toFixed(2)} | ${(row.good / rr).toFixed(2)} | ${(row.good / best).toFixed(2)} | ${pct(row.att)} | ${pct(row.hit)} | ${row.spread.toFixed(2)} | ${row.over2.toFixed(1)} s |`,
    );
  }
  console.log('');
}

const MIXES = ['mix', 'chat:0.35,hot:0.1,docs:0.2,agent:0.35'];
let mixRate = NaN;
for (const prefix of MIXES) {
  const capacity = capacityOf(prefix);
  const rate = 1.5 * capacity;
  if (prefix === 'mix') mixRate = rate;
  console.log(
    `\n**${prefix}**: round-robin's SLO capacity ${capacity} req/s; comparing at ${rate} req/s`,
  );
  table(
    `${prefix} — routers alone (admit all, dispatch at once), ${rate} req/s`,
    ROUTER_TYPES.map((t) => [t, routingOnly(t)]),
    { prefix, rate },
  );
  table(
    `${prefix} — inside the goodput policy (gates, flow control), ${rate} req/s`,
    [
      ['round-robin', routingOnly('round-robin')],
      ...['least-request', 'llm-d-like', 'sglang-cache-aware', 'expected-completion'].map(
        (t): [string, PolicyFile] => [`goodput + ${t}`, goodputWith(t)],
      ),
    ],
    { prefix, rate },
  );
}

// 3. One very hot agent preamble.
const agentRate = capacityOf('agent:1');
table(
  `agent:1 — one very hot preamble, ${agentRate} req/s (round-robin's capacity)`,
  ['round-robin', 'llm-d-like', 'sglang-cache-aware', 'expected-completion'].map((t) => [
    t,
    routingOnly(t),
  ]),
  { prefix: 'agent:1', rate: agentRate },
);

// 4. The default mix as a Mooncake-format trace, replayed.
const dir = mkdtempSync(join(tmpdir(), 'goodput-routing-'));
const file = join(dir, 'prefix-mix.mooncake.jsonl');
const stride = MOONCAKE_BLOCK_TOKENS / PREFIX_BLOCK_TOKENS;
const ids = new Map<string, number>();
const lines: string[] = [];
const workload = buildWorkload(base({ rate: mixRate, seed: 1 }), new SeededRng(1).fork('workload'));
for (const r of workload.requests) {
  const hashes = r.prefix?.hashes ?? [];
  const hashIds: number[] = [];
  // A 512-token block is named by the chained hash that ends it.
  for (let k = stride - 1; k < hashes.length; k += stride) {
    let id = ids.get(hashes[k]);
    if (id === undefined) ids.set(hashes[k], (id = ids.size));
    hashIds.push(id);
  }
  lines.push(
    JSON.stringify({
      timestamp: Math.round(r.arrivalMs),
      input_length: r.inputTokens,
      output_length: r.outputTokens,
      hash_ids: hashIds,
    }),
  );
}
writeFileSync(file, `${lines.join('\n')}\n`);
console.log(`\nMooncake-format trace: ${lines.length} rows, ${ids.size} distinct 512-token blocks`);
table(
  `mix as a Mooncake-format trace (512-token blocks), replayed at ${mixRate} req/s`,
  ROUTER_TYPES.filter((t) => t !== 'session-hash').map((t) => [t, routingOnly(t)]),
  { trace: file, prefix: undefined },
);
rmSync(dir, { recursive: true, force: true });
