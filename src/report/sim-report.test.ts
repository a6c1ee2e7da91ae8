import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runScenario, SCENARIO_DEFAULTS, type ScenarioSpec } from '../sim/scenario.ts';
import { loadPolicy } from '../sim/policy-source.ts';
import { withTimeline } from '../cli/html-report.ts';
import { DOOR_COLUMNS, simReportDoc } from './sim-report.ts';

/** The page of one simulated run of `spec` under `policy`. */
function page(spec: Partial<ScenarioSpec>, policy: string) {
  const { hooks, timeline } = withTimeline({ wallClock: { now: () => 0 } });
  const report = runScenario(
    { ...SCENARIO_DEFAULTS, seed: 1, numRequests: 40, rate: 10, ...spec },
    loadPolicy(policy),
    hooks,
  );
  return simReportDoc([{ report, timeline: timeline.data() }], 'goodput simulate');
}

/** The page's headline row for one simulated run of `spec` under `policy`. */
function headline(spec: Partial<ScenarioSpec>, policy: string): Record<string, string> {
  const { columns, rows } = page(spec, policy).headline;
  assert.deepEqual(columns, ['policy', ...DOOR_COLUMNS, 'GPU-s per good']);
  assert.equal(rows.length, 1);
  return Object.fromEntries(columns.map((c, i) => [c, rows[0][i]]));
}

test('report page: a run where nothing was served shows dashes, not 0.0 ms', () => {
  // Every prompt is longer than the model's 8K context: the contract gate refuses them all.
  const row = headline({ input: 'uniform:9000:9000', output: 'uniform:10:10' }, 'goodput');
  assert.equal(row.offered, '40');
  assert.equal(row.admitted, '0');
  assert.equal(row.rejected, '40');
  assert.equal(row['attainment (offered)'], '0.00%');
  // The report's ratios read 0 over an empty denominator (its checked interface: within [0, 1]);
  // the page says there was nothing to attain.
  assert.equal(row['attainment (admitted)'], '—');
  assert.equal(row['TTFT p50 / p99 ms'], '—');
  assert.equal(row['TPOT p50 / p99 ms'], '—');
  assert.equal(row['GPU-s per good'], '—');
  // Nor does its chart draw a bar of 0 over none admitted.
  const chart = page({ input: 'uniform:9000:9000', output: 'uniform:10:10' }, 'goodput')
    .sections.flatMap((s) => s.charts)
    .find((c) => c.id === 'attainment-class');
  const bars = Object.fromEntries((chart?.series ?? []).map((s) => [s.label, s.points[0][1]]));
  assert.deepEqual(bars, { 'goodput · offered': 0, 'goodput · admitted': null });
});

test('report page: a served run shows its latencies as p50 / p99 in ms', () => {
  const row = headline({ input: 'uniform:100:200', output: 'uniform:20:40' }, 'goodput');
  assert.equal(row.admitted, '40');
  assert.equal(row['attainment (admitted)'], '100.00%');
  assert.match(row['TTFT p50 / p99 ms'], /^\d+\.\d \/ \d+\.\d$/);
  assert.match(row['TPOT p50 / p99 ms'], /^\d+\.\d \/ \d+\.\d$/);
  assert.match(row['GPU-s per good'], /^\d+\.\d{3}$/);
});

test('report page: requests admitted and then not served are counted failed', () => {
  // The baseline admits everything; the engine refuses prompts past its 256-token context.
  const row = headline(
    { input: 'uniform:500:500', output: 'uniform:10:10', maxModelLen: 256 },
    'baseline-vllm',
  );
  assert.equal(row.admitted, '40');
  assert.equal(row.failed, '40');
  assert.equal(row['attainment (admitted)'], '0.00%');
});
