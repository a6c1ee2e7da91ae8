// Routing's margin as load grows: the prefix-heavy `mix` on 8 × llama-3.1-8b/H100 at 18, 24
// and 30 req/s (1.5×, 2× and 2.5× round-robin's SLO capacity of 12), 3,000 requests, seeds 1–2
// (mean good req/s). Routers alone (admit all, dispatch at once), and inside the goodput
// policy (`--policy goodput`: gates and flow control).
// Usage: node bench/routing-load.ts [--policy baseline|goodput] [--rates 18,24,30]
import { flag } from './bench-args.ts';
import { runScenario, SCENARIO_DEFAULTS } from '../src/sim/scenario.ts';
import { PRESETS } from '../src/core/config/presets.ts';
import { resolvePolicy, type PolicyFile } from '../src/core/config/policy.ts';

const inGoodput = flag('--policy') === 'goodput';
const rates = (flag('--rates') ?? '18,24,30').split(',').map(Number);
const routers = inGoodput
  ? ['least-request', 'llm-d-like', 'expected-completion']
  : ['round-robin', 'least-request', 'llm-d-like', 'sglang-cache-aware', 'expected-completion'];

const policyFor = (type: string): PolicyFile =>
  inGoodput
    ? { ...PRESETS.goodput, name: `goodput+${type}`, routing: { type } }
    : { ...PRESETS['baseline-vllm'], name: type, policy_revision: `${type}@1`, routing: { type } };

console.log(`| req/s | ${routers.join(' | ')} | expected-completion ÷ best other |`);
console.log(`| ---: |${' ---: |'.repeat(routers.length + 1)}`);
for (const rate of rates) {
  const good = routers.map((type) => {
    let sum = 0;
    for (const seed of [1, 2]) {
      const r = runScenario(
        {
          ...SCENARIO_DEFAULTS,
          model: 'llama-3.1-8b',
          replicas: 8,
          numRequests: 3000,
          prefix: 'mix',
          seed,
          rate,
        },
        resolvePolicy(policyFor(type)),
        { wallClock: { now: () => performance.now() } },
      );
      sum += r.goodput.requests_per_s;
    }
    return sum / 2;
  });
  const ours = good[routers.indexOf('expected-completion')];
  const best = Math.max(...good.filter((_, i) => routers[i] !== 'expected-completion'));
  console.log(
    `| ${rate} | ${good.map((g) => g.toFixed(2)).join(' | ')} | ${(ours / best).toFixed(3)} |`,
  );
}
