// Shared helpers for the cross-module suites: run a scenario in-process on a fake wall clock.
import { runScenario, SCENARIO_DEFAULTS, type ScenarioSpec } from '../src/sim/scenario.ts';
import { loadPolicy } from '../src/sim/policy-source.ts';
import type { Report } from '../src/core/observe/report.ts';

export function run(spec: Partial<ScenarioSpec>, policy = 'baseline-vllm'): Report {
  return runScenario({ ...SCENARIO_DEFAULTS, seed: 1, ...spec }, loadPolicy(policy), {
    wallClock: { now: () => 0 },
  });
}

/** The report without its wall-clock block: what must be byte-identical across runs. */
export function deterministicPart(report: Report): string {
  const { sim: _sim, ...rest } = report;
  return `${JSON.stringify(rest, null, 2)}\n`;
}
