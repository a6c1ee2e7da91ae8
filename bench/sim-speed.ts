// Simulator speed: the full Azure 2023 conversation trace (~1 h, 19,366 requests) on 8 replicas
// of llama-3-8b/h100, 1,000,000 synthetic requests on 64 replicas, and 1,000,000 arriving in one
// instant on the default 2 (a queue a million deep, drained). Each case runs in its own process
// so its peak memory is its own. Usage:
//   node bench/sim-speed.ts [--data ../shared/data] [--only azure,million,instant]
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { DATA_DIR, flag } from './bench-args.ts';
import { cpus } from 'node:os';
import { runScenario, SCENARIO_DEFAULTS, type ScenarioSpec } from '../src/sim/scenario.ts';
import { loadPolicy } from '../src/sim/policy-source.ts';

const data = DATA_DIR;

const CASES: Record<string, Partial<ScenarioSpec>> = {
  azure: { trace: `${data}/traces/azure2023/AzureLLMInferenceTrace_conv.csv`, replicas: 8 },
  million: {
    numRequests: 1_000_000,
    rate: 250,
    replicas: 64,
    input: 'sharegpt-sarathi',
    output: 'sharegpt-sarathi',
  },
  instant: { numRequests: 1_000_000, rate: Infinity },
};

const only = flag('--case');
if (only !== undefined) {
  // Child: run one case, print one JSON line.
  const wallClock = { now: () => performance.now() };
  const t0 = performance.now();
  const report = runScenario(
    { ...SCENARIO_DEFAULTS, seed: 1, ...CASES[only] },
    loadPolicy('baseline-vllm'),
    { wallClock },
  );
  const wallMs = performance.now() - t0;
  console.log(
    JSON.stringify({
      case: only,
      requests: report.offered.requests,
      completed: report.completed,
      simulated_s: report.duration_s,
      wall_ms: Math.round(wallMs),
      speedup: Math.round((report.duration_s * 1000) / wallMs),
      events: report.sim.events,
      events_per_s: Math.round(report.sim.events / (wallMs / 1000)),
      peak_rss_mib: Math.round(process.resourceUsage().maxRSS / 1024),
      attainment_offered: report.slo.attainment_offered,
      ttft_p99_ms: report.latency_ms.ttft.p99,
    }),
  );
} else {
  console.log(`machine: ${cpus()[0]?.model} × ${cpus().length}, node ${process.version}`);
  for (const name of (flag('--only') ?? 'azure,million').split(',')) {
    const r = spawnSync(
      process.execPath,
      [fileURLToPath(import.meta.url), '--case', name, '--data', data],
      {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    if (r.status !== 0) throw new Error(`case ${name} failed`);
    console.log(r.stdout.trim());
  }
}
