// Tests for StepPace (step-pace.ts): a replica's observed step time against its profile, and
// what flow control makes of it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FlowControl, type Candidate } from './flow-control.ts';
import { DEFAULT_STEP_PACE, StepPace } from './step-pace.ts';
import { ReplicaLedger, type LedgerEntry } from '../fleet/replica-ledger.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';
import { IDLE_KV, stepSpec } from './routing-test-kit.ts';

/** A step of 10 ms plus 1 ms per decoding sequence: 30 ms at 20 streams. */
const spec = stepSpec((s) => 10 + s.decodeSeqs, 10_000_000);
const flow = new FlowControl(spec, {
  itlMarginRatio: 0.1,
  relayGapRatio: 0,
  kvReserveRatio: 0,
  stallRisk: 0.5,
});
/** A short prompt with an 80 ms gap objective: the step budget is 72 ms. */
const candidate: Candidate = { promptTokens: 10, kvTokens: 100, itlSloMs: 80 };

function entry(i: number): LedgerEntry {
  return {
    replica: 0,
    promptTokens: 10,
    kvTokens: 100,
    seqs: 1,
    itlSloMs: 80,
    lengths: undefined,
    capTokens: 100_000,
    expectTokens: 100_000,
    streamed: 0,
    slowGaps: 0,
    lateGaps: 0,
    slot: i,
    spanFromMs: 0,
    spanFromToken: 0,
    spanProfileMs: 0,
  };
}

/** `streams` decoding on one replica, placed and started at 0 ms as the dispatcher does it. */
function replica(streams: number, planner = flow) {
  const ledger = new ReplicaLedger(1);
  const account = ledger.replicas[0];
  const pace = new StepPace(planner);
  const entries = Array.from({ length: streams }, (_, i) => entry(i));
  for (const e of entries) {
    pace.changing(account, 0);
    ledger.add(e);
  }
  // Their first tokens come out of one step; the next step carries all of them.
  for (const e of entries) {
    pace.started(account, 0);
    ledger.firstToken(e, 0);
  }
  return { ledger, entries, account, pace };
}

/**
 * Runs `steps` engine steps, each `slowdown` × the profile's, from `fromMs`; every stream gets a
 * token per step, delivered in bunches of `bunch` steps (as a busy relay reads them). Returns the
 * time after the last step.
 */
function run(
  r: ReturnType<typeof replica>,
  steps: number,
  slowdown: number,
  fromMs = 0,
  bunch = 1,
): number {
  const stepMs =
    slowdown *
    spec.stepTime.stepMs({
      prefillTokens: 0,
      prefillSeqs: 0,
      prefillAttnWork: 0,
      decodeSeqs: r.entries.length,
      decodeContextTokens: 0,
    });
  let now = fromMs;
  for (let s = 1; s <= steps; s += bunch) {
    now = fromMs + (s + bunch - 1) * stepMs;
    for (let k = 0; k < bunch; k++) {
      for (const e of r.entries) {
        r.ledger.token(e);
        r.pace.streamed(r.account, e, now);
      }
    }
  }
  return now;
}

test('pace: a replica that keeps its profile stays at 1; one twice as slow is measured at 2', () => {
  const kept = replica(20);
  run(kept, 2_000, 1);
  assert.equal(kept.account.pace, 1);
  assert.ok((kept.account.paceTrack.samples?.size ?? 0) >= DEFAULT_STEP_PACE.minSamples);

  const slow = replica(20);
  run(slow, 2_000, 2);
  assert.ok(Math.abs(slow.account.pace - 2) < 0.01, `pace ${slow.account.pace}`);
});

test("pace: within the tolerance it is the profile's own; before min_samples it is 1", () => {
  const near = replica(20);
  run(near, 2_000, 1 + DEFAULT_STEP_PACE.tolerance * 0.8);
  assert.equal(near.account.pace, 1);

  const young = replica(20);
  // 90 ms steps (3 × 30), longer than every_ms: a sample a step once the spans reach 16 tokens.
  const t = run(young, 20, 3);
  assert.equal(young.account.paceTrack.samples?.size, 5);
  assert.equal(young.account.pace, 1, 'five samples of 3: too few to move');
  run(young, 3, 3, t);
  assert.equal(young.account.paceTrack.samples?.size, DEFAULT_STEP_PACE.minSamples);
  assert.ok(Math.abs(young.account.pace - 3) < 0.01, `pace ${young.account.pace}`);
});

test('pace: tokens relayed in bunches are timed by their span, not their gaps', () => {
  const bunched = replica(20);
  run(bunched, 2_000, 1, 0, 4);
  assert.equal(bunched.account.pace, 1, 'three of four gaps are 0 and one is 4 steps');
});

test('pace: at most one sample per replica every every_ms, however many streams', () => {
  const r = replica(100);
  const end = run(r, 1_000, 1);
  const samples = r.account.paceTrack.samples?.size ?? 0;
  // A window of 32 fills; with 100 streams every token after the first span is due one.
  assert.equal(samples, DEFAULT_STEP_PACE.window);
  assert.ok(end / DEFAULT_STEP_PACE.everyMs >= samples);
});

test('pace: a slow replica holds fewer streams, an idle one still takes one', () => {
  const slow = replica(40);
  // By the profile 40 + 1 streams step in 51 ms, within the 72 ms budget.
  assert.equal(flow.holds(slow.account, candidate, IDLE_KV), true);
  run(slow, 2_000, 1.5);
  // At 1.5× they step in 76.5 ms: over the budget, so the 41st waits.
  assert.equal(flow.holds(slow.account, candidate, IDLE_KV), false);
  assert.equal(flow.fit(slow.account, candidate, IDLE_KV, 0).kind, 'no');

  const idle = new ReplicaLedger(1).replicas[0];
  idle.pace = 20;
  assert.equal(flow.holds(idle, candidate, IDLE_KV), true, 'else it is never timed again');
});

test('pace: a replica back at its profile returns to 1 as its window turns over', () => {
  const r = replica(20);
  const t = run(r, 2_000, 2);
  assert.ok(r.account.pace > 1.9);
  run(r, 3_000, 1, t);
  assert.equal(r.account.pace, 1);
});

test('pace: a removed replica forgets it', () => {
  const r = replica(20);
  run(r, 2_000, 2);
  StepPace.forget(r.account);
  assert.equal(r.account.pace, 1);
  assert.equal(r.account.paceTrack.samples, null);
});

test('pace: a span whose steps prefilled for a while is timed step by step', () => {
  // Here a step also costs 1 ms per 100 prompt tokens: 70 ms with a 4,000-token prompt pending.
  const prefillSpec: FleetSpec = {
    ...spec,
    stepTime: { stepMs: (s) => 10 + s.decodeSeqs + s.prefillTokens / 100 },
  };
  const prefillFlow = new FlowControl(prefillSpec, {
    itlMarginRatio: 0.1,
    relayGapRatio: 0,
    kvReserveRatio: 0,
    stallRisk: 0.5,
  });
  for (const slowdown of [1, 2]) {
    for (const placed of [
      'within a step',
      'as a step ends',
      'within a step, tokens relayed over 0.8 ms',
    ] as const) {
      const r = replica(20, prefillFlow);
      const pace = r.pace;
      const prompt = { ...entry(20), promptTokens: 4_000 };
      // Ten steps with the prompt pending, ten without, and so on: spans straddle both.
      const toggle = (step: number, atMs: number) => {
        if (step % 20 !== 0 && step % 20 !== 10) return;
        pace.changing(r.account, atMs);
        if (step % 20 === 0) r.ledger.add(prompt);
        else r.ledger.remove(prompt);
      };
      let now = 0;
      for (let step = 0; step < 2_000; step++) {
        // A step carries the batch as it stood when it began; a change while it runs waits.
        const stepMs = slowdown * prefillFlow.profileStepMs(r.account);
        if (placed !== 'as a step ends') toggle(step, now + stepMs / 2);
        now += stepMs;
        // A relay reads a step's tokens off their connections a little apart.
        const spread = placed === 'within a step, tokens relayed over 0.8 ms' ? 0.2 : 0;
        r.entries.forEach((e, k) => {
          r.ledger.token(e);
          pace.streamed(r.account, e, now + (k % 5) * spread);
        });
        if (placed === 'as a step ends') toggle(step, now);
      }
      const w = r.account.paceTrack.samples;
      const at = `slowdown ${slowdown}, placed ${placed}`;
      assert.equal(w?.quantile(0).toFixed(9), slowdown.toFixed(9), at);
      assert.equal(w?.quantile(100).toFixed(9), slowdown.toFixed(9), at);
      assert.equal(r.account.pace, slowdown, at);
    }
  }
});
