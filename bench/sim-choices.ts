// Requests of several choices (`n`) in the simulator, past capacity: the same replies a second
// asked as requests of 1, 4, 8 or 16 choices of one prompt each (RL group sampling), Sarathi's
// ShareGPT lengths on 2 × llama-3-8b/h100 under the `goodput` policy, seed 3. Per `n`: requests
// offered and admitted, attainment over admitted with the misses by kind, good reply tokens a
// second, and the share of prompt tokens the prefix cache served. `--code DIR` runs another
// checkout's code (its own src/), to set a change beside the code before it.
// Usage: node bench/sim-choices.ts [--replies 48] [--seconds 250] [--choices 1,4,8,16]
//          [--code DIR]
import { resolve } from 'node:path';
import { REPO_ROOT, flag } from './bench-args.ts';
import type { Report } from '../src/core/observe/report.ts';

const REPLIES = Number(flag('--replies') ?? 48);
const SECONDS = Number(flag('--seconds') ?? 250);
const CHOICES = (flag('--choices') ?? '1,4,8,16').split(',').map(Number);
const code = resolve(flag('--code') ?? REPO_ROOT);

const { runScenario, SCENARIO_DEFAULTS } = await import(resolve(code, 'src/sim/scenario.ts'));
const { loadPolicy } = await import(resolve(code, 'src/sim/policy-source.ts'));

console.log(
  `${REPLIES} replies a second for ${SECONDS} s, sharegpt-sarathi, 2 × llama-3-8b/h100, goodput, seed 3; code: ${code}\n`,
);
console.log(
  '| n | requests/s | offered | admitted | attainment over admitted | misses of admitted | good reply tok/s | prefix-hit share |',
);
console.log('| ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |');
for (const n of CHOICES) {
  const rate = REPLIES / n;
  const r: Report = runScenario(
    {
      ...SCENARIO_DEFAULTS,
      seed: 3,
      replicas: 2,
      input: 'sharegpt-sarathi',
      output: 'sharegpt-sarathi',
      rate,
      numRequests: Math.round(rate * SECONDS),
      ...(n > 1 ? { choices: n } : {}),
    },
    loadPolicy('goodput'),
    { wallClock: { now: () => performance.now() } },
  );
  const c = r.slo.by_class.interactive;
  const misses = Object.entries(c.admitted_misses)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  console.log(
    `| ${n} | ${rate} | ${c.requests} | ${c.admitted} | ${(100 * c.attainment_admitted).toFixed(2)}% | ${misses || 'none'} | ${Math.round(r.goodput.tokens_per_s)} | ${(100 * r.engine.prefix_hit_rate).toFixed(1)}% |`,
  );
}
