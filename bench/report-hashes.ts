// Whether a change to the simulator leaves what it simulates alone: a set of scenarios, chosen to
// reach every engine and fleet path a speed change could touch (tool calls in each KV mode,
// preemption by recompute, swap and auto under KV pressure, shared prefixes, client timeouts with
// naive retries, a group failure, P/D, an autoscaler, the `goodput` and `least-request` policies,
// Gamma arrivals, `vllm-0.6`, priority with a decode budget, 100K-token prompts), each run by this tree and by another checkout, with each
// report, less its `sim` timing section, hashed. Equal hashes: the same simulation.
// Usage: node bench/report-hashes.ts --base DIR [--only name,name]
//   (DIR: a checkout with its own src/, e.g. `git worktree add /tmp/base <commit>`)
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { REPO_ROOT, flag } from './bench-args.ts';

const baseDir = flag('--base');
if (baseDir === undefined) throw new Error('--base DIR: the checkout to compare against');
const only = flag('--only')?.split(',');

const SARATHI = { input: 'sharegpt-sarathi', output: 'sharegpt-sarathi' };
const PRESSURE = { rate: 60, numRequests: 2000, numGpuBlocks: 3000, ...SARATHI };
const TOOLS = { rate: 20, numRequests: 600, toolCalls: '2:1500:300' };

/** name → [policy preset, scenario fields over the defaults (seed 3, `sharegpt-vllm`)]. */
const CASES: Record<string, readonly [string, Record<string, unknown>]> = {
  tools_auto: ['baseline-vllm', TOOLS],
  tools_keep: ['baseline-vllm', { ...TOOLS, toolKv: 'keep' }],
  tools_swap: ['baseline-vllm', { ...TOOLS, toolKv: 'swap' }],
  pressure_recompute: ['baseline-vllm', PRESSURE],
  pressure_swap: ['baseline-vllm', { ...PRESSURE, preemption: 'swap' }],
  pressure_auto: ['baseline-vllm', { ...PRESSURE, preemption: 'auto' }],
  prefix: ['baseline-vllm', { rate: 30, numRequests: 1500, prefix: 'chat:1', replicas: 2 }],
  timeouts_retries: [
    'baseline-vllm',
    {
      rate: 40,
      numRequests: 1500,
      clientTimeoutMs: 8000,
      maxAttempts: 3,
      retryMode: 'naive',
      ...SARATHI,
    },
  ],
  fail_group: ['baseline-vllm', { rate: 30, numRequests: 1500, replicas: 3, failGroupAtS: [20] }],
  pd: ['baseline-vllm', { rate: 20, numRequests: 800, replicas: 2, prefillReplicas: 1 }],
  autoscaler: [
    'baseline-vllm',
    { rate: 30, numRequests: 3000, autoscaler: 'hpa-utilization', minReplicas: 1, maxReplicas: 4 },
  ],
  goodput_policy: ['goodput', { rate: 30, numRequests: 1500, replicas: 2 }],
  least_request: ['least-request', { rate: 30, numRequests: 1500, replicas: 3 }],
  gamma: [
    'baseline-vllm',
    { rate: 30, numRequests: 1500, replicas: 2, arrival: 'gamma', burstiness: 0.2 },
  ],
  vllm_0_6: [
    'baseline-vllm',
    { rate: 20, numRequests: 1000, engineVersion: 'vllm-0.6', ...SARATHI },
  ],
  priority_budget: [
    'baseline-vllm',
    {
      ...PRESSURE,
      schedulingPolicy: 'priority',
      decodeTokenBudget: 64,
      classes: 'interactive:0.5,batch:0.5',
    },
  ],
  long_context: [
    'baseline-vllm',
    {
      rate: 2,
      numRequests: 100,
      model: 'llama-3.1-8b',
      maxModelLen: 131072,
      input: 'uniform:20000:100000',
      output: 'uniform:50:500',
    },
  ],
};

type Run = (name: string) => string;

async function load(dir: string): Promise<Run> {
  const scenario = await import(resolve(dir, 'src/sim/scenario.ts'));
  const policies = await import(resolve(dir, 'src/sim/policy-source.ts'));
  return (name) => {
    const [policy, over] = CASES[name];
    const spec = {
      ...scenario.SCENARIO_DEFAULTS,
      seed: 3,
      input: 'sharegpt-vllm',
      output: 'sharegpt-vllm',
      ...over,
    };
    try {
      const report = scenario.runScenario(spec, policies.loadPolicy(policy), {
        wallClock: { now: () => performance.now() },
      });
      const { sim: _timings, ...rest } = report;
      return createHash('sha256').update(JSON.stringify(rest)).digest('hex').slice(0, 16);
    } catch (e) {
      return `error: ${(e as Error).message.slice(0, 120)}`;
    }
  };
}

const here = await load(REPO_ROOT);
const base = await load(baseDir);
console.log(`base: ${baseDir}`);
console.log('| scenario | base | this | same |');
console.log('| --- | --- | --- | --- |');
let differ = 0;
for (const name of Object.keys(CASES)) {
  if (only !== undefined && !only.includes(name)) continue;
  const [b, h] = [base(name), here(name)];
  if (b !== h) differ++;
  console.log(`| ${name} | ${b} | ${h} | ${b === h ? 'yes' : '**no**'} |`);
}
console.log(differ === 0 ? '\nevery report identical' : `\n${differ} reports differ`);
