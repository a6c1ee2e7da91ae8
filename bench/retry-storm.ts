// Retry storms: the Azure conversation trace at 2× the fleet's SLO capacity (rate scale
// 5.866 on 4 × llama-3-8b/h100, see bench/admission.ts), with clients that time out after
// 5 s (--timeout-ms) and either never retry, retry with discipline (backoff with full jitter ≥ Retry-After,
// one idempotency key, no retry after tokens) or retry naively (at once, as new requests,
// even after tokens). Usage: node bench/retry-storm.ts [--data ../shared/data] [--scale 5.866]
import { DATA_DIR, flag } from './bench-args.ts';
import { runScenario, SCENARIO_DEFAULTS, type ScenarioSpec } from '../src/sim/scenario.ts';
import { loadPolicy } from '../src/sim/policy-source.ts';

const data = DATA_DIR;
const base: ScenarioSpec = {
  ...SCENARIO_DEFAULTS,
  seed: 1,
  trace: `${data}/traces/azure2023/AzureLLMInferenceTrace_conv.csv`,
  replicas: 4,
  classes: 'interactive',
  rateScale: Number(flag('--scale') ?? 5.866),
  clientTimeoutMs: Number(flag('--timeout-ms') ?? 5_000),
};
const CLIENTS: Record<string, Partial<ScenarioSpec>> = {
  'no retries': { maxAttempts: 1 },
  disciplined: { maxAttempts: 4, retryMode: 'disciplined' },
  naive: { maxAttempts: 4, retryMode: 'naive' },
};
const wallClock = { now: () => performance.now() };

console.log(
  '| policy | clients | good | attainment offered | vs no retries | attempts / request | timeouts | rejected (reasons) |',
);
console.log('|---|---|---:|---:|---:|---:|---:|---|');
for (const policy of ['baseline-vllm', 'goodput']) {
  let reference = 0;
  for (const [name, client] of Object.entries(CLIENTS)) {
    const r = runScenario({ ...base, ...client }, loadPolicy(policy), { wallClock });
    if (name === 'no retries') reference = r.slo.good;
    console.log(
      `| ${policy} | ${name} | ${r.slo.good} | ${(r.slo.attainment_offered * 100).toFixed(1)}% | ` +
        `${(r.slo.good / Math.max(1, reference)).toFixed(2)}× | ${r.client.retry_amplification.toFixed(2)} | ` +
        `${r.client.timeouts} | ${r.admission.rejected} ${JSON.stringify(r.admission.reject_reasons)} |`,
    );
  }
}
