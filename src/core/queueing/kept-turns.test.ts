// Tests for kept turns (kept-turns.ts): a refused request's place in line, how it is counted
// ahead of new requests, claimed by its retry or run out, and what the refused client is told.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GRACE_MS, KeptTurns, keepTurn, turnHasCome } from './kept-turns.ts';
import type { Rejection } from '../request/decision.ts';
import type { LlmRequest } from '../request/request.ts';

const MAX_MS = 60_000;

const refusal = (retryAfterMs: number, slackMs = 100): Rejection => ({
  outcome: 'reject',
  status: 503,
  reason: 'deadline',
  retryAfterMs,
  assessment: {
    demand: undefined as never,
    slackMs,
    predictedTtftMs: 1_500,
    waitMs: 900,
    modelledWaitMs: 900,
    queueTargetMs: 300,
  },
});

const asked = (key?: string): LlmRequest => ({
  id: 'r1',
  arrivalMs: 0,
  inputTokens: 100,
  outputTokens: 50,
  tenant: 'default',
  sloClass: 'interactive',
  ...(key === undefined ? {} : { idempotencyKey: key }),
});

test('a turn counts ahead of new requests of its band and lower, not higher', () => {
  const turns = new KeptTurns(MAX_MS);
  assert.ok(turns.keep('a', 1, 'default', 0, 1_000));
  assert.ok(turns.keep('b', 0, 'default', 0, 1_000));
  assert.equal(turns.ahead(0, 10), 1, 'priority 0 waits behind the turn of its own band only');
  assert.equal(turns.ahead(1, 10), 2);
  assert.equal(turns.ahead(2, 10), 2);
});

test("in its own band a request waits behind the turns its band's order puts before it", () => {
  const turns = new KeptTurns(MAX_MS);
  turns.keep('heavy-1', 0, 'heavy', 0, 1_000);
  turns.keep('heavy-2', 0, 'heavy', 0, 1_000);
  turns.keep('light-1', 0, 'light', 0, 1_000);
  turns.keep('above', 0, 'heavy', 0, 1_000);
  turns.keep('other-band', 1, 'heavy', 0, 1_000);
  // A fair band: the heavy tenant has had more service, so its turns do not go first.
  const fair = {
    before: (_band: number, other: string, tenant: string) =>
      other !== 'heavy' || tenant === 'heavy',
  };
  assert.equal(
    turns.ahead(0, 10, 'light', fair),
    1,
    'a light tenant waits behind its own turn only',
  );
  assert.equal(turns.ahead(0, 10, 'heavy', fair), 4, 'the heavy one behind every turn');
  // In a lower band every turn of the band above comes first, whoever kept it.
  assert.equal(turns.ahead(1, 10, 'light', fair), 4);
  assert.equal(turns.ahead(0, 10), 4, 'without an order, every turn of the band');
});

test('a retry is due from 100 ms before its turn until its grace ends, early before', () => {
  const turns = new KeptTurns(MAX_MS);
  turns.keep('k', 0, 'default', 1_000, 2_000);
  assert.deepEqual(turns.standing('k', 1_000), { due: false, inMs: 2_000 });
  assert.deepEqual(turns.standing('k', 2_899), { due: false, inMs: 101 });
  assert.deepEqual(turns.standing('k', 2_900), { due: true });
  assert.deepEqual(turns.standing('k', 3_000 + GRACE_MS - 1), { due: true });
  assert.equal(turns.standing('k', 3_000 + GRACE_MS), undefined, 'run out at the grace');
  assert.equal(turns.standing('other', 3_000), undefined);
  assert.equal(turnHasCome(turns, 'k', 2_950), false, 'gone once run out');
  assert.equal(turnHasCome(undefined, 'k', 2_950), false);
  assert.equal(turnHasCome(turns, undefined, 2_950), false);
});

test('turns count at the share of clients that came back: claims keep it, lapses lower it', () => {
  const turns = new KeptTurns(MAX_MS);
  assert.equal(turns.returnRatio, 1, 'every client is expected back until one is not');
  for (let i = 0; i < 32; i++) turns.keep(`gone${i}`, 0, 'default', 0, 500);
  assert.equal(turns.ahead(0, 0), 32);
  // All run out unclaimed: no room is kept for clients that never come back.
  assert.equal(turns.ahead(0, 500 + GRACE_MS), 0);
  assert.equal(turns.lapsed, 32);
  const low = turns.returnRatio;
  assert.ok(low < 0.15, `show rate ${low} after 32 no-shows`);
  turns.keep('x', 0, 'default', 10_000, 500);
  assert.ok(Math.abs(turns.ahead(0, 10_000) - low) < 1e-12, 'one turn, weighted');
  turns.claim('x');
  assert.equal(turns.claimed, 1);
  assert.ok(turns.returnRatio > low);
  assert.equal(turns.size, 0);
  // A claimed turn is not counted as run out when its grace passes.
  assert.equal(turns.ahead(0, 20_000), 0);
  assert.equal(turns.lapsed, 32);
});

test('read between decisions, turns past their grace are gone as at the next decision', () => {
  const turns = new KeptTurns(MAX_MS);
  turns.keep('a', 0, 'default', 0, 500);
  assert.equal(turns.asOf(500 + GRACE_MS - 1).size, 1, 'still within its grace');
  assert.deepEqual([turns.asOf(500 + GRACE_MS).size, turns.lapsed], [0, 1]);
});

test('keeping a turn again replaces the old one; the count never double-counts', () => {
  const turns = new KeptTurns(MAX_MS);
  turns.keep('k', 0, 'default', 0, 1_000);
  turns.keep('k', 0, 'default', 1_000, 1_000);
  assert.equal(turns.size, 1);
  assert.equal(turns.ahead(0, 1_000), 1);
  assert.deepEqual(turns.standing('k', 1_950), { due: true });
  // The first turn's heap entry runs out (at 3,000) without counting the live one as lapsed.
  assert.equal(turns.ahead(0, 3_500), 1);
  assert.equal(turns.lapsed, 0);
});

test('no turn is kept at or past the longest Retry-After: the queue is past what can be told', () => {
  const turns = new KeptTurns(MAX_MS);
  assert.equal(turns.keep('k', 0, 'default', 0, MAX_MS), false);
  assert.equal(turns.size, 0);
});

test('keepTurn: a refusal for the wait with slack keeps a turn at its Retry-After, and says so', () => {
  const turns = new KeptTurns(MAX_MS);
  const told = keepTurn(turns, refusal(1_200), asked('k'), 0, 5_000, undefined);
  assert.equal(told.keptTurn, true);
  assert.equal(told.retryAfterMs, 1_200);
  assert.deepEqual(turns.standing('k', 6_200), { due: true });
});

test('keepTurn keeps none without a key, a policy of turns, slack, or a refusal for the wait', () => {
  const turns = new KeptTurns(MAX_MS);
  assert.equal(keepTurn(turns, refusal(1_000), asked(), 0, 0, undefined).keptTurn, undefined);
  assert.equal(
    keepTurn(undefined, refusal(1_000), asked('k'), 0, 0, undefined).keptTurn,
    undefined,
  );
  // Its deadline already missed at the wait it would have now: a turn would only come later.
  assert.equal(
    keepTurn(turns, refusal(1_000, -1), asked('k'), 0, 0, undefined).keptTurn,
    undefined,
  );
  const memory: Rejection = { ...refusal(1_000), reason: 'kv_capacity' };
  assert.equal(keepTurn(turns, memory, asked('k'), 0, 0, undefined).keptTurn, undefined);
  assert.equal(turns.size, 0);
});

test('keepTurn: a retry early for its turn is told the time left, and keeps it', () => {
  const turns = new KeptTurns(MAX_MS);
  keepTurn(turns, refusal(3_000), asked('k'), 0, 0, undefined);
  const standing = turns.standing('k', 1_000);
  assert.deepEqual(standing, { due: false, inMs: 2_000 });
  const told = keepTurn(turns, refusal(700), asked('k'), 0, 1_000, standing);
  assert.equal(told.retryAfterMs, 2_000);
  assert.equal(told.keptTurn, true, 'its turn is still kept, and it is told so');
  assert.deepEqual(turns.standing('k', 3_000), { due: true });
});

test('keepTurn: a retry that came for its turn and is refused again has come back; a final refusal drops the turn', () => {
  const turns = new KeptTurns(MAX_MS);
  keepTurn(turns, refusal(1_000), asked('k'), 0, 0, undefined);
  const due = turns.standing('k', 1_000);
  const again = keepTurn(turns, refusal(500), asked('k'), 0, 1_000, due);
  assert.equal(turns.claimed, 1, 'counted as back');
  assert.equal(again.keptTurn, true, 'and keeps a new turn');
  assert.deepEqual(turns.standing('k', 1_500), { due: true });
  const early = turns.standing('k', 1_100);
  const final: Rejection = { outcome: 'reject', status: 503, reason: 'deadline', final: true };
  keepTurn(turns, final, asked('k'), 0, 1_100, early);
  assert.equal(turns.size, 0);
  assert.equal(turns.lapsed, 0, 'a turn dropped for good is not a client that stayed away');
});
