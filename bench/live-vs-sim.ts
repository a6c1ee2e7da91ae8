// The simulator predicts the live system: `goodput bench` against a `goodput engine` process
// (the engine model on the wall clock, behind real HTTP) and `goodput simulate` of the same
// command line (same workload flags and seed, one replica, the pass-through baseline policy),
// side by side. Reports median and p99 TTFT and TPOT from each and the live/simulated ratio.
// The `choices` setups ask several choices of each prompt (`n`): live, `goodput engine` runs one
// sequence per choice; simulated, so does the engine model. TPOT is over the longest choice.
// Usage: node bench/live-vs-sim.ts [--setups all|quick|choices] [--model llama-3-8b] [--gpu h100]
import { spawn } from 'node:child_process';
import { REPO_ROOT, flag } from './bench-args.ts';
import { runBench } from '../src/loadgen/run-bench.ts';
import { runScenario, SCENARIO_DEFAULTS } from '../src/sim/scenario.ts';
import { presetPolicy } from '../src/core/config/presets.ts';
import { wallClock } from '../src/runtime/wall-clock.ts';
import { wallTimers } from '../src/runtime/wall-timers.ts';
import type { WorkloadOptions } from '../src/sim/workload/workload-options.ts';

const model = flag('--model') ?? 'llama-3-8b';
const gpu = flag('--gpu') ?? 'h100';

interface Setup {
  readonly name: string;
  readonly workload: WorkloadOptions & { rate: number; numRequests: number };
}
const SETUPS: readonly Setup[] = [
  {
    name: 'sharegpt-vllm, 4 req/s',
    workload: { rate: 4, numRequests: 300, input: 'sharegpt-vllm', output: 'sharegpt-vllm' },
  },
  {
    name: 'sharegpt-vllm, 12 req/s',
    workload: { rate: 12, numRequests: 600, input: 'sharegpt-vllm', output: 'sharegpt-vllm' },
  },
  {
    name: 'sharegpt-vllm, 8 req/s, burstiness 0.5',
    workload: {
      rate: 8,
      burstiness: 0.5,
      arrival: 'gamma',
      numRequests: 400,
      input: 'sharegpt-vllm',
      output: 'sharegpt-vllm',
    },
  },
  {
    name: 'long prompts, 3 req/s',
    workload: { rate: 3, numRequests: 150, input: 'uniform:2000:6000', output: 'uniform:100:400' },
  },
];
/** Groups of replies to one prompt (`n`), as RL trainers sample them. */
const CHOICE_SETUPS: readonly Setup[] = [
  {
    name: 'n = 8, 1,500-token prompts, 1 req/s',
    workload: {
      rate: 1,
      numRequests: 60,
      input: 'fixed:1500',
      output: 'uniform:100:300',
      choices: 8,
    },
  },
  {
    name: 'n = 4, sharegpt-vllm, 4 req/s',
    workload: {
      rate: 4,
      numRequests: 240,
      input: 'sharegpt-vllm',
      output: 'sharegpt-vllm',
      choices: 4,
    },
  },
];
const which = flag('--setups') ?? 'all';
const setups =
  which === 'quick'
    ? SETUPS.slice(0, 1)
    : which === 'choices'
      ? CHOICE_SETUPS
      : [...SETUPS, ...CHOICE_SETUPS];

async function startEngine(): Promise<{ url: string; stop: () => void }> {
  const child = spawn(
    process.execPath,
    ['bin/goodput.js', 'engine', '--port', '0', '--model', model, '--gpu', gpu, '--seed', '1'],
    {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += String(d);
      const m = /serving \S+ at (http\S+?)\/v1/.exec(out);
      if (m) resolve(m[1]);
    });
    child.once('exit', () => reject(new Error(`engine exited: ${out}`)));
  });
  return { url, stop: () => child.kill('SIGTERM') };
}

const fmt = (x: number) => x.toFixed(1);
const ratio = (a: number, b: number) => `${(a / b).toFixed(3)}`;
const rows: string[] = [];
for (const setup of setups) {
  const seed = 1;
  const sim = runScenario(
    {
      ...SCENARIO_DEFAULTS,
      ...setup.workload,
      seed,
      model,
      gpu,
      replicas: 1,
    } as typeof SCENARIO_DEFAULTS & { seed: number },
    presetPolicy('baseline-vllm'),
    { wallClock },
  );
  // A fresh engine per setup: nothing cached or queued from the one before.
  const engine = await startEngine();
  const live = await runBench(
    {
      baseUrl: engine.url,
      endpoint: 'completions',
      workload: setup.workload,
      seed,
      sendClass: false,
      percentiles: [50, 99],
      timeoutMs: 600_000,
    },
    { clock: wallClock, timers: wallTimers() },
  );
  engine.stop();
  const m = live.metrics as Record<string, number>;
  const s = sim.latency_ms;
  rows.push(
    `| ${setup.name} | ${m.completed}/${live.offered} | ${fmt(m.median_ttft_ms)} / ${fmt(s.ttft.p50)} (${ratio(m.median_ttft_ms, s.ttft.p50)}) | ${fmt(m.p99_ttft_ms)} / ${fmt(s.ttft.p99)} (${ratio(m.p99_ttft_ms, s.ttft.p99)}) | ${fmt(m.median_tpot_ms)} / ${fmt(s.tpot.p50)} (${ratio(m.median_tpot_ms, s.tpot.p50)}) | ${fmt(m.p99_tpot_ms)} / ${fmt(s.tpot.p99)} (${ratio(m.p99_tpot_ms, s.tpot.p99)}) | ${fmt(m.p99_send_lag_ms)} |`,
  );
  console.error(`done: ${setup.name}`);
}
console.log(
  `${model} on ${gpu}, 1 replica; live (goodput bench → goodput engine) / simulated (goodput simulate, baseline-vllm), ms (live ÷ simulated)\n`,
);
console.log('| setup | completed | TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 | send lag p99 |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) console.log(r);
