// Tests for FlowControl (flow-control.ts): how many requests alike a replica holds, with and
// without a new prompt chunk in the step, the adapter slots a batch has, and the step share
// that gaps delivered late cut (gap-feedback.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FlowControl } from './flow-control.ts';
import { DEFAULT_GAP_FEEDBACK } from './gap-feedback.ts';
import { DEFAULT_STEP_PACE } from './step-pace.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';
import { ReplicaLedger } from '../fleet/replica-ledger.ts';
import { IDLE_KV, ledgerEntry, stepSpec } from './routing-test-kit.ts';

/** A decode step of 10 ms plus 1 ms per sequence; context costs nothing. */
const spec = stepSpec((s) => 10 + s.decodeSeqs + s.prefillSeqs);
const PARAMS = { itlMarginRatio: 0.1, relayGapRatio: 0, kvReserveRatio: 0.1, stallRisk: 0.5 };
const flow = (o: Partial<FleetSpec> = {}) => new FlowControl({ ...spec, ...o }, PARAMS);
/** 10 ms a step, 1 ms a stream, a twentieth of a ms a prompt token: prompts cost their size. */
const prefillStep = {
  stepMs: (s: { decodeSeqs: number; prefillTokens: number }) =>
    10 + s.decodeSeqs + s.prefillTokens / 20,
};

test('steady batch: the step budget binds — 10 + B ≤ 0.9 × 80 gives 62', () => {
  assert.equal(flow().steadyBatch(80, 1_000, 1_000), 62);
  assert.equal(flow().steadyBatch(11.2, 1_000, 1_000), 1, 'not even one fits: still 1');
});

test("steady batch: the relay's share of the gap is kept free too — 10 + B ≤ 0.75 × 80 gives 50", () => {
  const relayed = new FlowControl(spec, {
    itlMarginRatio: 0.1,
    relayGapRatio: 0.15,
    kvReserveRatio: 0.1,
    stallRisk: 0.5,
  });
  assert.equal(relayed.gapShare, 0.75);
  assert.equal(relayed.steadyBatch(80, 1_000, 1_000), 50);
});

test('steady batch: sequence slots and KV bind when they are tighter', () => {
  assert.equal(flow().steadyBatch(Infinity, 1_000, 1_000), 256, 'no objective: the slots');
  assert.equal(flow({ maxNumSeqs: 32 }).steadyBatch(80, 1_000, 1_000), 32);
  // 0.9 × 1,000,000 KV tokens at 20,000 a request.
  assert.equal(flow().steadyBatch(80, 1_000, 20_000), 45);
});

test('steady batch: a step that also carries a new prompt chunk holds fewer streams', () => {
  // The step model here charges 1 ms per prefilling sequence: 10 + B + 1 ≤ 72 gives 61.
  assert.equal(flow().steadyBatch(80, 1_000, 1_000, 2_000), 61);
  // A tenth of a ms a prefill token: a 500-token chunk leaves 72 − 10 − 50 = 12 streams.
  const heavy = flow({ stepTime: { stepMs: (s) => 10 + s.decodeSeqs + s.prefillTokens / 10 } });
  assert.equal(heavy.steadyBatch(80, 1_000, 1_000, 500), 12);
  assert.equal(heavy.steadyBatch(80, 1_000, 1_000), 62);
});

test('a batch holds max_loras distinct adapters: a third waits until one of them has left', () => {
  const ledger = new ReplicaLedger(1);
  const a = ledger.replicas[0];
  const entry = (adapter?: string) => ledgerEntry({ adapter });
  const c = (adapter?: string) => ({ promptTokens: 100, kvTokens: 200, itlSloMs: 80, adapter });
  const two = flow({ maxLoras: 2 });
  const sql = [entry('sql'), entry('sql')];
  for (const e of [...sql, entry('chat'), entry()]) ledger.add(e);
  assert.deepEqual(
    [...a.adapters],
    [
      ['sql', 2],
      ['chat', 1],
    ],
  );
  assert.equal(two.holds(a, c('sql'), IDLE_KV), true, 'its adapter already runs there');
  assert.equal(two.holds(a, c(), IDLE_KV), true, 'the base model takes no slot');
  assert.equal(two.holds(a, c('code'), IDLE_KV), false, 'both slots taken');
  assert.equal(two.fit(a, c('code'), IDLE_KV, 0).kind, 'no');
  assert.equal(flow({ maxLoras: 3 }).holds(a, c('code'), IDLE_KV), true, 'a third slot');
  ledger.remove(sql[0]);
  assert.equal(two.holds(a, c('code'), IDLE_KV), false, 'sql still runs there');
  ledger.remove(sql[1]);
  assert.equal(two.holds(a, c('code'), IDLE_KV), true, 'sql has left: its slot is free');
});

test("a replica that says how much KV it holds is held to its own cache, not the fleet's", () => {
  const a = new ReplicaLedger(1).replicas[0];
  const c = { promptTokens: 100, kvTokens: 50_000, itlSloMs: 80 };
  const f = flow({ replicaKvTokens: 100_000 });
  assert.equal(f.holds(a, c, IDLE_KV), true, "within 90% of the spec's 100,000 tokens");
  const small = { kvUsage: 0, kvCapacityTokens: 50_000 };
  assert.equal(f.holds(a, c, small), false, 'past 90% of its own 50,000');
  assert.equal(f.fit(a, c, small, 0).kind, 'no');
  const big = { kvUsage: 0.5, kvCapacityTokens: 400_000 };
  assert.equal(f.holds(a, c, big), true, '200,000 in use of 400,000: 160,000 left to its reserve');
  assert.equal(f.holds(a, c, { ...big, kvUsage: 0.8 }), false, '320,000 in use: 40,000 left');
});

const params = { itlMarginRatio: 0.1, relayGapRatio: 0.15, kvReserveRatio: 0.1, stallRisk: 0.5 };

test('flow control: an unplanned late gap shrinks the batch a replica holds, until the share is back', () => {
  const flow = new FlowControl(spec, { ...params, gapFeedback: DEFAULT_GAP_FEEDBACK });
  // 10 + B ≤ 0.75 × 80 gives 50.
  assert.equal(flow.steadyBatch(80, 1_000, 1_000), 50);
  flow.delivered(ledgerEntry(), 60, 1_000);
  assert.equal(flow.steadyBatch(80, 1_000, 1_000), 50, 'within 0.8 of the objective');
  flow.delivered(ledgerEntry(), 70, 1_000);
  // 10 + B ≤ 0.675 × 80 = 54 gives 44.
  assert.equal(flow.steadyBatch(80, 1_000, 1_000), 44);
  assert.deepEqual(flow.delivery(1_000), { share: 0.675, lateGaps: 1 });
  flow.at(9_000);
  // 0.755 capped at 0.75 (and 10 + B ≤ 60 gives 50 again).
  assert.equal(flow.steadyBatch(80, 1_000, 1_000), 50);
});

test('flow control: late gaps within the stalls the dispatcher charged a stream cut nothing', () => {
  const flow = new FlowControl(spec, { ...params, gapFeedback: DEFAULT_GAP_FEEDBACK });
  const stalled = ledgerEntry({ slowGaps: 2, streamed: 10 });
  flow.delivered(stalled, 300, 1_000);
  flow.delivered(stalled, 300, 1_100);
  assert.deepEqual(flow.delivery(1_100), { share: 0.75, lateGaps: 0 }, 'both planned');
  flow.delivered(stalled, 300, 1_200);
  assert.equal(flow.delivery(1_200).lateGaps, 1, 'a third was not');
});

test('flow control without feedback trusts the host', () => {
  for (const gapFeedback of [null, undefined]) {
    const flow = new FlowControl(spec, { ...params, gapFeedback });
    flow.delivered(ledgerEntry(), 500, 1_000);
    assert.deepEqual(flow.delivery(1_000), { share: 0.75, lateGaps: 0 });
    assert.equal(flow.steadyBatch(80, 1_000, 1_000), 50);
  }
});

test('flow control: a request admitted before a cut is placed under the share it was admitted with', () => {
  const flow = new FlowControl(spec, { ...params, gapFeedback: DEFAULT_GAP_FEEDBACK });
  const ledger = new ReplicaLedger(1);
  for (let i = 0; i < 45; i++) {
    const e = ledgerEntry({ streamed: 10 });
    ledger.add(e);
    ledger.firstToken(e, 0);
  }
  const a = ledger.replicas[0];
  const c = { promptTokens: 100, kvTokens: 200, itlSloMs: 80 };
  // 10 + 46 streams = 56 ms: within 0.75 × 80 = 60.
  assert.equal(flow.holds(a, c, IDLE_KV), true);
  flow.delivered(ledgerEntry(), 70, 1_000);
  // Cut to 0.675 × 80 = 54 ms: a request admitted now waits for streams to end …
  assert.equal(flow.holds(a, c, IDLE_KV), false);
  assert.equal(flow.fit(a, c, IDLE_KV, 1_000).kind, 'no');
  // … one admitted before the cut, under 0.75, goes now, as its admission promised.
  assert.equal(flow.holds(a, { ...c, gapShare: 0.75 }, IDLE_KV), true);
  assert.equal(flow.fit(a, { ...c, gapShare: 0.75 }, IDLE_KV, 1_000).kind, 'fast');
});

test('a replica whose engine holds 8 steps of queued prompts takes no more until they start', () => {
  // 1,024-token steps: every step fits the gap budget, so only the queue of prompts bounds it.
  const small = flow({ maxBatchedTokens: 1_024 });
  const ledger = new ReplicaLedger(1);
  const a = ledger.replicas[0];
  const c = { promptTokens: 1_000, kvTokens: 1_200, itlSloMs: 80 };
  const queued = Array.from({ length: 9 }, () => ledgerEntry({ promptTokens: 1_000 }));
  for (const e of queued.slice(0, 8)) ledger.add(e);
  assert.equal(a.pendingPrefillTokens, 8_000);
  assert.equal(
    small.fit(a, c, IDLE_KV, 0).kind,
    'fast',
    '8,000 tokens queued: under 8 steps of 1,024',
  );
  ledger.add(queued[8]);
  assert.equal(small.fit(a, c, IDLE_KV, 0).kind, 'no', '9,000 queued: past 8 steps');
  // The first of them starts decoding: its prompt has left the queue.
  ledger.firstToken(queued[0], 0);
  assert.equal(small.fit(a, c, IDLE_KV, 0).kind, 'fast');
  // With 8,192-token steps the same queue is one step.
  assert.equal(flow().fit(a, c, IDLE_KV, 0).kind, 'fast');
});

test("vLLM's long_prefill_token_threshold: a long prompt's chunks are that size beside the streams", () => {
  // The budget is 0.9 × 80 = 72.
  const whole = flow({ stepTime: prefillStep });
  const cut = flow({ stepTime: prefillStep, longPrefillTokenThreshold: 1_024 });
  const ledger = new ReplicaLedger(1);
  const a = ledger.replicas[0];
  const streaming = ledgerEntry({ promptTokens: 100 });
  ledger.add(streaming);
  ledger.firstToken(streaming, 0);
  const c = { promptTokens: 4_000, kvTokens: 4_200, itlSloMs: 80 };
  // Whole, the prompt's one step is 10 + 1 + 200 ms; cut, its first is 10 + 1 + 51.2.
  assert.notEqual(whole.fit(a, c, IDLE_KV, 0).kind, 'fast');
  assert.deepEqual(cut.fit(a, c, IDLE_KV, 0), { kind: 'fast', stepMs: 62.2 });
  // Alone: four steps of 1,024, 1,024, 1,024 and 928 tokens; the heaviest is a whole chunk.
  assert.equal(whole.prefillMs(4_000), 210);
  assert.ok(Math.abs(cut.prefillMs(4_000) - (40 + 4_000 / 20)) < 1e-9);
  // Whole its step is a stall; cut, its heaviest chunk is 10 + 51.2 ≤ 0.9 × 72.
  assert.equal(whole.isLongPrompt(4_000, 80), true);
  assert.equal(cut.isLongPrompt(4_000, 80), false);
  // A threshold past the step's budget is the budget.
  assert.equal(
    flow({ stepTime: prefillStep, longPrefillTokenThreshold: 100_000 }).prefillMs(4_000),
    210,
  );
});

test('staged prefill: a long prompt goes in pieces that fit a step beside the streams', () => {
  // The budget is 0.9 × 80 = 72 ms; a piece alone may take 60% of it: 10 + piece / 20 ≤ 43.2.
  const staged = new FlowControl(
    { ...spec, stepTime: prefillStep, stagesPrefill: true },
    { ...PARAMS, stagedPrefill: true },
  );
  assert.equal(staged.stagedPieceTokens(4_000, 80), 512, 'whole 256-token quanta: 512');
  assert.equal(staged.stagedPieceTokens(1_000, 80), 0, 'short as it is: 60 ms ≤ 0.9 × 72');
  assert.equal(staged.stagedPieceTokens(4_000, Infinity), 0, 'no stream to stall');
  assert.equal(staged.isLongPrompt(4_000, 80), false);
  // Not staged where the policy or the host says no: the prompt is long, and waits for a turn.
  const hostless = new FlowControl(
    { ...spec, stepTime: prefillStep },
    { ...PARAMS, stagedPrefill: true },
  );
  const off = new FlowControl({ ...spec, stepTime: prefillStep, stagesPrefill: true }, PARAMS);
  for (const f of [hostless, off]) {
    assert.equal(f.stagedPieceTokens(4_000, 80), 0);
    assert.equal(f.isLongPrompt(4_000, 80), true);
  }
  // Seven pieces of 512 and one of 416, each beside 20 ms of decodes, and a step of decodes
  // alone between pieces while the host sends the next.
  const pieces = 7 * (10 + 512 / 20) + (10 + 416 / 20);
  assert.ok(Math.abs(staged.servedPrefillMs(4_000, 80, 20) - (pieces + 15 * 20)) < 1e-9);
  assert.equal(hostless.servedPrefillMs(4_000, 80, 20), 210);

  const ledger = new ReplicaLedger(1);
  const a = ledger.replicas[0];
  const stream = ledgerEntry({ promptTokens: 100 });
  ledger.add(stream);
  ledger.firstToken(stream, 0);
  // Beside the stream its first piece fits the step; whole, the prompt is a stall.
  const c = { promptTokens: 4_000, kvTokens: 4_200, itlSloMs: 80 };
  assert.deepEqual(staged.fit(a, c, IDLE_KV, 0), { kind: 'fast', stepMs: 10 + 1 + 512 / 20 });
  assert.notEqual(hostless.fit(a, c, IDLE_KV, 0).kind, 'fast');
  // A prompt with no gap objective of its own is staged for the stream it joins.
  assert.deepEqual(staged.fit(a, { ...c, itlSloMs: Infinity }, IDLE_KV, 0).kind, 'fast');
  // Placed, only its piece is what the next step may take of it.
  ledger.add(ledgerEntry({ promptTokens: 4_000, pieceTokens: 512 }));
  assert.equal(a.pendingPrefillTokens, 4_000);
  assert.equal(a.pendingStagedTokens, 3_488);
  assert.deepEqual(staged.fit(a, { ...c, promptTokens: 200 }, IDLE_KV, 0), {
    kind: 'fast',
    stepMs: 10 + 1 + (512 + 200) / 20,
  });
});

test('staged prefill: only on a replica known to keep its profile, measured and no slower', () => {
  const measuring = new FlowControl(
    { ...spec, stepTime: prefillStep, stagesPrefill: true },
    { ...PARAMS, stagedPrefill: true, pace: DEFAULT_STEP_PACE },
  );
  const ledger = new ReplicaLedger(1);
  const a = ledger.replicas[0];
  assert.equal(measuring.pieceOn(a, 4_000, 80), 0, 'its pace not measured yet: whole');
  assert.equal(measuring.stagesAnywhere(ledger.replicas), false);
  assert.equal(measuring.isLongPrompt(4_000, 80, 1, false), true, 'long where none stages');
  a.paceTrack.measured = true;
  assert.equal(measuring.pieceOn(a, 4_000, 80), 512);
  assert.equal(measuring.isLongPrompt(4_000, 80, 1, true), false);
  a.pace = 2;
  assert.equal(measuring.pieceOn(a, 4_000, 80), 0, 'twice as slow as its profile: whole');
});
