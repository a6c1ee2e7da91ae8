/**
 * The probes `goodput capacity` searches with: one run at a rate per replica group, judged by
 * attainment over offered requests. Simulated: the scenario of the command line at that rate
 * (its policy, engine and fleet), long enough to reach steady state. Live: `goodput bench`
 * against the URL at that rate times the groups behind it, judged by `--goodput`. Both use the
 * same workload flags and seed, so a simulated and a live envelope measure the same mix.
 */
import type { CapacityProbe } from '../core/autoscale/capacity-search.ts';
import type { ResolvedPolicy } from '../core/config/policy.ts';
import type { LlmRequest } from '../core/request/request.ts';
import { runBench, type BenchSpec } from '../loadgen/run-bench.ts';
import { wallClock } from '../runtime/wall-clock.ts';
import { wallTimers } from '../runtime/wall-timers.ts';
import { SeededRng } from '../runtime/seeded-rng.ts';
import { runScenario, type ScenarioSpec } from '../sim/scenario.ts';
import { buildWorkload } from '../sim/workload/build-workload.ts';
import type { WorkloadOptions } from '../sim/workload/workload-options.ts';

export type Probe = (ratePerGroup: number) => Promise<Omit<CapacityProbe, 'pass'>>;

/** Requests a probe offers: `seconds` of arrivals at the rate, at least `minRequests`. */
export function probeRequests(rate: number, seconds: number, minRequests: number): number {
  return Math.max(minRequests, Math.ceil(rate * seconds));
}

export function simulatedProbe(
  spec: ScenarioSpec,
  policy: ResolvedPolicy,
  probe: { seconds: number; minRequests: number },
): Probe {
  return async (ratePerGroup) => {
    const rate = ratePerGroup * spec.replicas;
    const numRequests = probeRequests(rate, probe.seconds, probe.minRequests);
    const r = runScenario({ ...spec, rate, numRequests }, policy, { wallClock });
    return {
      ratePerGroup,
      attainment: r.slo.attainment_offered,
      detail: {
        attainment_admitted: r.slo.attainment_admitted,
        goodput_rps_per_group: r.goodput.requests_per_s / spec.replicas,
        rejected: r.admission.rejected,
        // Of requests served: with none, none (not 0 ms).
        ttft_p99_ms: r.latency_ms.ttft.count === 0 ? null : r.latency_ms.ttft.p99,
        tpot_p99_ms: r.latency_ms.tpot.count === 0 ? null : r.latency_ms.tpot.p99,
      },
    };
  };
}

export function liveProbe(
  spec: BenchSpec,
  groups: number,
  probe: { seconds: number; minRequests: number },
): Probe {
  return async (ratePerGroup) => {
    const rate = ratePerGroup * groups;
    const numRequests = probeRequests(rate, probe.seconds, probe.minRequests);
    const run = await runBench(
      { ...spec, workload: { ...spec.workload, rate, numRequests } },
      { clock: wallClock, timers: wallTimers() },
    );
    const m = run.metrics as Record<string, number | null>;
    return {
      ratePerGroup,
      attainment: m.attainment_offered ?? 0,
      detail: {
        attainment_completed: m.attainment_completed,
        goodput_rps_per_group: (m.request_goodput ?? 0) / groups,
        failed: m.failed,
        ttft_p99_ms: m.completed === 0 ? null : m.p99_ttft_ms,
        tpot_p99_ms: m.completed === 0 ? null : m.p99_tpot_ms,
      },
    };
  };
}

/** The workload's mean prompt and output lengths: the mix the envelope was measured at. */
export function mixOf(
  workload: WorkloadOptions,
  seed: number,
): { input_mean: number; output_mean: number } {
  const w = buildWorkload(
    { ...workload, numRequests: 2000, rate: 1 },
    new SeededRng(seed).fork('workload'),
  );
  let n = 0;
  let input = 0;
  let output = 0;
  for (const r of w.requests as Iterable<LlmRequest>) {
    n++;
    input += r.inputTokens;
    output += r.outputTokens;
  }
  return { input_mean: input / Math.max(1, n), output_mean: output / Math.max(1, n) };
}
