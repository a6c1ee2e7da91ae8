// Kept turns across two replicas sharing one store (shared-turns.ts): what each replica's own
// count and the store hold as a turn is kept on one, taken, claimed or dropped on the other.
// Each replica decides as the pipeline does (core/queueing/kept-turns.ts `keepTurn`); the store
// is the in-memory one, which tells turns' ends at once, as Redis does by pub/sub.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KeptTurns, keepTurn } from '../core/queueing/kept-turns.ts';
import type { Rejection } from '../core/request/decision.ts';
import type { LlmRequest } from '../core/request/request.ts';
import { VirtualClock } from '../runtime/virtual-clock.ts';
import { MemoryStore } from './shared/memory-store.ts';
import type { TurnEnd } from './shared/shared-store.ts';
import { SharedTurns, type TurnLookup } from './shared-turns.ts';

const deadline = (retryAfterMs: number): Rejection => ({
  outcome: 'reject',
  status: 503,
  reason: 'deadline',
  retryAfterMs,
  // Kept only while its deadline could be made: its slack ≥ 0 (the rest is not read).
  assessment: { slackMs: 100 } as Rejection['assessment'],
});
const quota: Rejection = {
  outcome: 'reject',
  status: 429,
  reason: 'tenant_tokens',
  retryAfterMs: 5_000,
};
const asked = (key: string): LlmRequest => ({
  id: key,
  arrivalMs: 0,
  inputTokens: 100,
  outputTokens: 50,
  tenant: 'acme',
  sloClass: 'interactive',
  idempotencyKey: key,
});

/** A store whose word of turns' ends comes when `tell` is called, as pub/sub's may come late. */
class LateWord extends MemoryStore {
  readonly #queued: (() => void)[] = [];
  override watchTurns(told: (end: TurnEnd) => void): Promise<() => void> {
    return super.watchTurns((end) => this.#queued.push(() => told(end)));
  }
  tell(): void {
    for (const word of this.#queued.splice(0)) word();
  }
}

/** Two replicas of one store, each with its own turns, deciding as its pipeline would. */
function replicas() {
  const clock = new VirtualClock();
  const store = new LateWord({ clock });
  const replica = (name: string) => {
    const turns = new KeptTurns(60_000);
    const shared = new SharedTurns(store, name, () => turns);
    /** `req` arrives; the pipeline refuses it as `refusal` says, or admits it (undefined). */
    const decide = async (req: LlmRequest, refusal?: Rejection) => {
      const now = clock.now();
      const turn: TurnLookup | undefined = await shared.lookup(req, now);
      const key = req.idempotencyKey ?? '';
      const standing =
        turns.standing(key, now) ?? (turn?.here === false ? turn.standing : undefined);
      let told: Rejection | undefined;
      if (refusal === undefined) {
        if (standing !== undefined) turns.claim(key);
      } else {
        told = keepTurn(turns, refusal, req, 0, now, standing);
      }
      shared.decided(req, turn, told);
      // Word of what ended comes after the decision (pub/sub's own time).
      await Promise.resolve();
      store.tell();
      return { turn, told };
    };
    return { turns, decide };
  };
  const at = (ms: number) => {
    clock.at(ms, () => {});
    clock.run(ms);
  };
  return { a: replica('a'), b: replica('b'), store, at };
}

test('a turn kept on one replica is taken by its retry on another, and claimed where it was kept', async () => {
  const { a, b, store, at } = replicas();
  const first = await a.decide(asked('k'), deadline(1_000));
  assert.equal(first.told?.keptTurn, true);
  assert.equal(a.turns.size, 1);
  // Early at the other replica: told the time left, the turn stays where it was kept.
  at(400);
  const early = await b.decide(asked('k'), deadline(2_000));
  assert.deepEqual(early.turn, { standing: { due: false, inMs: 600 }, here: false });
  assert.equal(early.told?.retryAfterMs, 600);
  assert.equal(b.turns.size, 0, 'the other replica keeps none for it');
  assert.equal(a.turns.size, 1);
  // Due there: taken from the store, admitted, and claimed where it was kept.
  at(1_000);
  const due = await b.decide(asked('k'));
  assert.deepEqual(due.turn, { standing: { due: true }, here: false });
  assert.deepEqual([a.turns.size, a.turns.claimed, b.turns.claimed], [0, 1, 0]);
  assert.equal(await store.takeTurn('acme', 'k', 100, 'x'), undefined, 'taken');
});

test('a retry refused again where it landed keeps its new turn there; the old one is claimed', async () => {
  const { a, b, at } = replicas();
  await a.decide(asked('k'), deadline(1_000));
  at(1_000);
  const again = await b.decide(asked('k'), deadline(1_500));
  assert.equal(again.told?.keptTurn, true);
  // Its end, told after b kept the new turn, was told as b's own: b's new turn stands.
  assert.deepEqual([a.turns.size, a.turns.claimed], [0, 1]);
  assert.deepEqual([b.turns.size, b.turns.claimed], [1, 0]);
  // The third attempt lands back on a: the turn b kept is taken there.
  at(2_500);
  const third = await a.decide(asked('k'));
  assert.deepEqual(third.turn, { standing: { due: true }, here: false });
  assert.deepEqual([b.turns.size, b.turns.claimed], [0, 1]);
});

test('a retry refused for good ends its turn dropped: its client is not counted back', async () => {
  const { a, b, at } = replicas();
  await a.decide(asked('k'), deadline(1_000));
  at(300);
  await b.decide(asked('k'), quota);
  assert.deepEqual([a.turns.size, a.turns.claimed, a.turns.lapsed], [0, 0, 0]);
  assert.equal(a.turns.returnRatio, 1, 'neither back nor gone');
});

test('a retry on the replica that kept its turn claims it there, and the store lets it go', async () => {
  const { a, b, store, at } = replicas();
  await a.decide(asked('k'), deadline(1_000));
  at(1_000);
  const back = await a.decide(asked('k'));
  assert.deepEqual(back.turn, { standing: { due: true }, here: true });
  assert.deepEqual([a.turns.size, a.turns.claimed], [0, 1]);
  assert.equal(await store.takeTurn('acme', 'k', 100, 'x'), undefined, 'let go');
  assert.equal((await b.decide(asked('k'), deadline(1_000))).turn, undefined);
});

test('without a shared store, a replica reads its own turns alone', async () => {
  const clock = new VirtualClock();
  const turns = new KeptTurns(60_000);
  const alone = new SharedTurns(undefined, 'a', () => turns);
  turns.keep('k', 0, 'acme', 0, 1_000);
  assert.deepEqual(await alone.lookup(asked('k'), clock.now()), {
    standing: { due: false, inMs: 1_000 },
    here: true,
  });
  assert.equal(await alone.lookup(asked('other'), clock.now()), undefined);
  const off = new SharedTurns(undefined, 'a', () => undefined);
  assert.equal(await off.lookup(asked('k'), clock.now()), undefined, 'a policy that keeps none');
});
