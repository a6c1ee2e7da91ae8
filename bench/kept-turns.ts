// Is a refusal's Retry-After when a retry will be admitted? In the simulator, under deep
// overload, clients that retry as told (disciplined: never sooner than Retry-After, one
// Idempotency-Key, up to 4 attempts): of the retries that came back after a refusal for their
// wait, the share admitted — with the refused requests' turns kept (`retry_after.keep_turns`,
// the default) and without — and each run's goodput.
// Usage: node bench/kept-turns.ts [--data ../shared/data] [--rate-scale 8] [--duration-s 600]
//        [--attempts 4] [--burstiness B]
import { DATA_DIR, flag } from './bench-args.ts';
import { runScenario, SCENARIO_DEFAULTS, type ScenarioSpec } from '../src/sim/scenario.ts';
import { resolvePolicy } from '../src/core/config/policy.ts';
import { PRESETS } from '../src/core/config/presets.ts';
import type { DecisionRecord } from '../src/core/observe/decision-record.ts';

const burstiness = flag('--burstiness');
const spec: ScenarioSpec = {
  ...SCENARIO_DEFAULTS,
  seed: 3,
  replicas: 2,
  classes: 'interactive',
  trace: `${DATA_DIR}/traces/azure2023/AzureLLMInferenceTrace_conv.csv`,
  durationS: Number(flag('--duration-s') ?? 600),
  rateScale: Number(flag('--rate-scale') ?? 8),
  maxAttempts: Number(flag('--attempts') ?? 4),
  retryMode: 'disciplined',
  ...(burstiness === undefined ? {} : { arrival: 'gamma', burstiness: Number(burstiness) }),
};

interface Tally {
  came: number;
  admitted: number;
}
const pct = (t: Tally) => `${t.admitted}/${t.came} (${((100 * t.admitted) / t.came).toFixed(1)}%)`;

console.log(
  `Azure 2023 conversation, ${spec.durationS} s at ×${spec.rateScale}` +
    `${burstiness === undefined ? '' : `, Gamma ${burstiness}`}, 2 × llama-3-8b/h100, interactive, ` +
    `disciplined clients of ${spec.maxAttempts} attempts, seed ${spec.seed}`,
);
console.log(
  '| keep_turns | retries after a kept turn: admitted | after a refusal for the wait, no turn: admitted | good req/s | attainment offered | admitted | expired after admission |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|');
for (const keep of [true, false]) {
  const policy = resolvePolicy({
    ...PRESETS.goodput,
    admission: { type: 'goodput', retry_after: { keep_turns: keep } },
  });
  // Each request's last refusal for its wait: whether it kept a turn.
  const last = new Map<string, boolean>();
  const kept: Tally = { came: 0, admitted: 0 };
  const unkept: Tally = { came: 0, admitted: 0 };
  const r = runScenario(spec, policy, {
    wallClock: { now: () => 0 },
    onDecision: (d: DecisionRecord) => {
      const a = d.admission;
      if (a.result === 'expire' || a.result === 'abort') return;
      const id = d.request_id;
      const before = last.get(id);
      if (before !== undefined) {
        const t = before ? kept : unkept;
        t.came++;
        if (a.result === 'admit' || a.result === 'degrade') t.admitted++;
        last.delete(id);
      }
      if (a.result === 'reject' && a.reason === 'deadline' && a.retry_after_ms !== null) {
        last.set(id, a.kept_turn);
      }
    },
  });
  console.log(
    `| ${keep} | ${kept.came === 0 ? '–' : pct(kept)} | ${unkept.came === 0 ? '–' : pct(unkept)} | ` +
      `${r.goodput.requests_per_s.toFixed(2)} | ${r.slo.attainment_offered.toFixed(3)} | ` +
      `${r.slo.attainment_admitted.toFixed(3)} | ${r.admission.expired_after_admission} |`,
  );
}
