// Simulator speed, this tree against another checkout, paired in one process: the same
// scenario (the 1M case's shape — Poisson 250 req/s, `sharegpt-sarathi`, 64 replicas,
// `baseline-vllm` — at fewer requests) run by each code in turn, rounds alternating which goes
// first. On a shared machine whose speed drifts by 2× over minutes, separate runs minutes apart
// cannot tell a 10% change; rounds seconds apart on one core can. Round 0 warms both up and is
// left out of the ratio. Each run's report, less its `sim` timing section, is hashed: equal
// hashes show the two codes simulate the same thing.
// Usage: node bench/sim-paired.ts --base DIR [--requests 30000] [--rounds 7] [--policy NAME]
//   (DIR: a checkout with its own src/, e.g. `git worktree add /tmp/base <commit>`)
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { REPO_ROOT, flag } from './bench-args.ts';

const baseDir = flag('--base');
if (baseDir === undefined) throw new Error('--base DIR: the checkout to compare against');
const requests = Number(flag('--requests') ?? '30000');
const rounds = Number(flag('--rounds') ?? '7');
/** A preset both codes know; the default is the speed case's. */
const policy = flag('--policy') ?? 'baseline-vllm';
if (!(Number.isInteger(requests) && requests > 0)) throw new Error(`--requests ${requests}`);
if (!(Number.isInteger(rounds) && rounds >= 2)) throw new Error(`--rounds ${rounds}: at least 2`);

interface Code {
  readonly name: string;
  run(): { ms: number; hash: string };
}

async function load(name: string, dir: string): Promise<Code> {
  const scenario = await import(resolve(dir, 'src/sim/scenario.ts'));
  const policies = await import(resolve(dir, 'src/sim/policy-source.ts'));
  return {
    name,
    run() {
      const t0 = performance.now();
      const report = scenario.runScenario(
        {
          ...scenario.SCENARIO_DEFAULTS,
          seed: 1,
          numRequests: requests,
          rate: 250,
          replicas: 64,
          input: 'sharegpt-sarathi',
          output: 'sharegpt-sarathi',
        },
        policies.loadPolicy(policy),
        { wallClock: { now: () => performance.now() } },
      );
      const ms = performance.now() - t0;
      const { sim: _timing, ...rest } = report;
      return { ms, hash: createHash('sha256').update(JSON.stringify(rest)).digest('hex') };
    },
  };
}

const codes = [await load('base', baseDir), await load('this', REPO_ROOT)];
const total = [0, 0];
const ratios: number[] = [];
const hashes = [new Set<string>(), new Set<string>()];
console.log(
  `${requests.toLocaleString('en-US')} requests, ${policy}, ${rounds} rounds; base: ${baseDir}`,
);
console.log('| round | first | base ms | this ms | this ÷ base |\n|---:|---|---:|---:|---:|');
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? [0, 1] : [1, 0];
  const ms = [0, 0];
  for (const i of order) {
    const out = codes[i].run();
    ms[i] = out.ms;
    hashes[i].add(out.hash);
    if (r > 0) total[i] += out.ms;
  }
  if (r > 0) ratios.push(ms[1] / ms[0]);
  const ratio = (ms[1] / ms[0]).toFixed(3);
  console.log(
    `| ${r} | ${codes[order[0]].name} | ${ms[0].toFixed(0)} | ${ms[1].toFixed(0)} | ${ratio} |`,
  );
}
const same =
  hashes[0].size === 1 && hashes[1].size === 1 && [...hashes[0]][0] === [...hashes[1]][0];
ratios.sort((a, b) => a - b);
const median = ratios[Math.floor((ratios.length - 1) / 2)];
console.log(
  `\nthis ÷ base over rounds 1–${rounds - 1}: ${(total[1] / total[0]).toFixed(3)} of the sums; ` +
    `median round ${median.toFixed(3)} (rounds ${ratios[0].toFixed(3)}–${ratios[ratios.length - 1].toFixed(3)})`,
);
console.log(`reports (less timings): ${same ? 'identical' : 'DIFFERENT'}`);
