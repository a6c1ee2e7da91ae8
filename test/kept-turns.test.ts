// Kept turns in the simulator, through the same pipeline the gateway runs: under a standing
// overload, disciplined clients (one Idempotency-Key, never sooner than Retry-After) that are
// told their turn is kept come back to be admitted, where without kept turns a retry competes
// again with every new arrival. Deterministic: the counts are exact for the seed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runScenario, SCENARIO_DEFAULTS, type ScenarioSpec } from '../src/sim/scenario.ts';
import { resolvePolicy } from '../src/core/config/policy.ts';
import { PRESETS } from '../src/core/config/presets.ts';
import type { DecisionRecord } from '../src/core/observe/decision-record.ts';

const spec: ScenarioSpec = {
  ...SCENARIO_DEFAULTS,
  seed: 5,
  replicas: 1,
  rate: 60,
  numRequests: 1_500,
  input: 'exp:600',
  output: 'exp:150',
  classes: 'interactive',
  maxAttempts: 2,
  retryMode: 'disciplined',
};

/** Of the retries after a refusal for their wait: those at a kept turn, and those admitted. */
function retries(keepTurns: boolean) {
  const policy = resolvePolicy({
    ...PRESETS.goodput,
    admission: { type: 'goodput', retry_after: { keep_turns: keepTurns } },
  });
  const last = new Map<string, boolean>();
  const tally = {
    kept: 0,
    keptAdmitted: 0,
    keptBudget: 0,
    other: 0,
    otherAdmitted: 0,
    otherBudget: 0,
  };
  const report = runScenario(spec, policy, {
    wallClock: { now: () => 0 },
    onDecision: (d: DecisionRecord) => {
      const a = d.admission;
      if (a.result === 'expire' || a.result === 'abort') return;
      const before = last.get(d.request_id);
      if (before !== undefined) {
        const admitted = a.result === 'admit' || a.result === 'degrade' ? 1 : 0;
        const budget = a.reason === 'retry_budget' ? 1 : 0;
        if (before) {
          tally.kept++;
          tally.keptAdmitted += admitted;
          tally.keptBudget += budget;
        } else {
          tally.other++;
          tally.otherAdmitted += admitted;
          tally.otherBudget += budget;
        }
        last.delete(d.request_id);
      }
      if (a.result === 'reject' && a.reason === 'deadline' && a.retry_after_ms !== null) {
        last.set(d.request_id, a.kept_turn);
      }
    },
  });
  return { ...tally, report };
}

test('simulated overload: retries at a kept turn are admitted, without one they compete again', (t) => {
  const kept = retries(true);
  const without = retries(false);
  assert.ok(kept.kept >= 20, `retries at a kept turn: ${kept.kept}`);
  assert.equal(without.kept, 0, 'no turn is kept when the policy keeps none');
  const share = (n: number, of: number) => n / Math.max(1, of);
  t.diagnostic(
    `admitted at a kept turn ${kept.keptAdmitted}/${kept.kept}, ` +
      `without ${without.otherAdmitted}/${without.other}`,
  );
  const atTurn = share(kept.keptAdmitted, kept.kept);
  const competing = share(without.otherAdmitted, without.other);
  assert.ok(
    atTurn > 2 * competing,
    `admitted at a kept turn ${kept.keptAdmitted}/${kept.kept}, without ${without.otherAdmitted}/${without.other}`,
  );
  // A retry at its kept turn was invited: the tenant's retry budget, which refuses others, lets
  // it by.
  assert.ok(without.otherBudget > 0, 'the retry budget refuses retries that hold no turn');
  assert.equal(kept.keptBudget, 0, 'no retry at a kept turn is refused for the retry budget');
  // The report counts the same turns: every retry at its kept turn claimed it.
  const turns = (kept.report.client as { kept_turns?: { kept: number; claimed: number } })
    .kept_turns;
  assert.equal(turns?.claimed, kept.kept);
  assert.ok((turns?.kept ?? 0) >= kept.kept);
  assert.equal((without.report.client as { kept_turns?: unknown }).kept_turns, undefined);
  // The promise to what was admitted holds either way.
  assert.equal(kept.report.admission.expired_after_admission, 0);
  assert.ok(kept.report.slo.attainment_admitted >= 0.99, `${kept.report.slo.attainment_admitted}`);
});
