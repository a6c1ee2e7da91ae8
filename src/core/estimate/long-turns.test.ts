// Tests for longTurn (long-turns.ts): when a long prompt behind others gets a replica whose
// streams can spare its stall, which replicas serve the turns, and what it shares in its turn.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { longTurn, type LongTurnAsk, type LongTurnFleet } from './long-turns.ts';
import { FlowControl } from '../routing/flow-control.ts';
import { ReplicaLedger } from '../fleet/replica-ledger.ts';
import { ledgerEntry } from '../routing/routing-test-kit.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';
import { DEFAULT_SLO_CLASSES } from '../request/slo-classes.ts';

/** Prefill 1 ms per 100 tokens; decode steps timed by the fleet's `decodeStepMs` (10 ms). */
const spec: FleetSpec = {
  model: 'm',
  adapters: [],
  maxModelLen: 32_768,
  maxBatchedTokens: 8_192,
  maxNumSeqs: 256,
  kvBytesPerToken: 1_000,
  replicaKvTokens: 1_000_000,
  stepTime: { stepMs: (s) => 5 + s.prefillTokens / 100 + s.decodeSeqs * 0.1 },
};
const flow = new FlowControl(spec, {
  itlMarginRatio: 0.1,
  relayGapRatio: 0,
  kvReserveRatio: 0.1,
  stallRisk: 0.5,
});
const interactive = DEFAULT_SLO_CLASSES.interactive;
const batch = DEFAULT_SLO_CLASSES.batch;

/**
 * Replicas, each with a stream `streamed[i]` tokens in (unknown lengths: risk 1 each) that ends
 * at `capTokens`.
 */
function fleet(
  streamed: number[],
  heldFor: (r: number) => typeof batch | undefined = () => undefined,
  capTokens = 4_096,
) {
  const ledger = new ReplicaLedger(streamed.length);
  streamed.forEach((s, replica) => {
    const e = ledgerEntry({ replica, kvTokens: 1_000, capTokens, expectTokens: 500 });
    ledger.add(e);
    ledger.firstToken(e, 0);
    for (let i = 1; i < s; i++) ledger.token(e);
  });
  const replicas = streamed.map((_, index) => ({
    index,
    inFlight: 1,
    running: 1,
    waiting: 0,
    kvUsage: 0,
  }));
  const f: LongTurnFleet = {
    ledger,
    flow,
    replicas,
    holds: {
      heldFor: (r) => {
        const cls = heldFor(r);
        return cls === undefined ? undefined : { cls };
      },
      atMost: (n) => Math.max(1, Math.floor(n / 2)),
    },
    decodeStepMs: 10,
    spec,
  };
  return f;
}

const ask = (o: Partial<LongTurnAsk> = {}): LongTurnAsk => ({
  promptTokens: 6_000,
  seqs: 1,
  cls: interactive,
  lengths: undefined,
  ahead: 0,
  aheadMeanTokens: 0,
  ...o,
});

test('the first turn: when the soonest replica’s streams have the gaps to spare a stall', () => {
  // One slow gap is spared from the 103rd token: 103 − 83 = 20 steps of 10 ms on replica 1.
  const t = longTurn(ask(), fleet([3, 83]));
  assert.equal(t.waitMs, 200);
  assert.equal(t.sharedPrefillMs, 0);
});

test('behind others: their turns first, on the replicas that serve long prompts', () => {
  // Half the replicas serve turns: replica 1 alone. Each later turn: the prompts ahead
  // prefilled (two of 4,000 fill a step's 8,192: 85 ms), then their own fresh streams run 103
  // steps. Two ahead fill the first turn; this one takes the next.
  const f = fleet([3, 83]);
  const t = longTurn(ask({ ahead: 2, aheadMeanTokens: 4_000 }), f);
  assert.equal(flow.prefillMs(8_000), 85);
  assert.ok(Math.abs(t.waitMs - (200 + 85 + 1_030)) < 0.02, `${t.waitMs}`);
  // One ahead of 3,000 leaves room in its turn: this one of 4,000 joins it, and its first token
  // waits for the other's prefill too.
  const joined = longTurn(ask({ promptTokens: 4_000, ahead: 1, aheadMeanTokens: 3_000 }), f);
  assert.equal(joined.waitMs, 200);
  assert.ok(
    Math.abs(joined.sharedPrefillMs - flow.prefillMs(7_000) + flow.prefillMs(4_000)) < 1e-9,
  );
});

test('a replica held for a request of a later class is not its: that one waits on it', () => {
  // Replica 1 is held for a batch request; an interactive long prompt would never be placed
  // there while it waits, so its turn is replica 0's: 100 steps.
  const f = fleet([3, 83], (r) => (r === 1 ? batch : undefined));
  assert.equal(longTurn(ask(), f).waitMs, 1_000);
  // A batch long prompt may take it: the hold is for its own class.
  assert.equal(longTurn(ask({ cls: batch }), f).waitMs, 200);
});

test('a later turn waits for the streams there to spare every stall before it, or to end', () => {
  // One replica, its stream 150 tokens into a 250-token answer; the long prompts' own streams
  // are sure to run past 300 tokens, so they spare any stall (no fresh steps). Each of 6,000
  // tokens takes a turn of its own (65 ms of prefill). The stream spares one stall now, two
  // from its 203rd token (53 steps), and three never: the third turn waits for it to end (100
  // steps), not 2 × 65 ms.
  const long = { cdf: (tokens: number) => (tokens < 300 ? 0 : 1) };
  const f = fleet([150], undefined, 250);
  assert.equal(longTurn(ask({ lengths: long }), f).waitMs, 0);
  const second = longTurn(ask({ lengths: long, ahead: 1, aheadMeanTokens: 6_000 }), f);
  assert.ok(Math.abs(second.waitMs - 530) < 0.02, `${second.waitMs}`);
  const third = longTurn(ask({ lengths: long, ahead: 2, aheadMeanTokens: 6_000 }), f);
  assert.ok(Math.abs(third.waitMs - 1_000) < 0.02, `${third.waitMs}`);
  // Past it, one a turn's prefill apart: the stream has ended.
  const fifth = longTurn(ask({ lengths: long, ahead: 4, aheadMeanTokens: 6_000 }), f);
  assert.ok(Math.abs(fifth.waitMs - 1_130) < 0.02, `${fifth.waitMs}`);
});
