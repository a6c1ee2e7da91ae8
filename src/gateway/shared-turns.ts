/**
 * Kept turns (core/queueing/kept-turns.ts) across gateway replicas. Behind a load balancer a
 * retry lands on any replica, most often not the one that told it its Retry-After; judged there
 * as a new request, it would lose the turn kept for it, and the replica that kept it would hold
 * room for a client that never comes back to it. So with a shared store (`--redis`) each turn
 * kept is also kept there; a retry whose key this replica holds no turn for takes its turn from
 * the store (once due, by one replica alone) and is decided as its holder; and every turn's end
 * — taken, claimed by an admitted retry, or dropped — is told to the replica that kept it, which
 * stops counting it in the queue ahead (its return ratio counts the client come back).
 *
 * Each replica counts the turns it kept, as it counts the requests it queued: a load balancer
 * spreads both alike. While the store cannot be reached nothing is shared: a retry elsewhere is
 * judged as new, and the turn it left runs out where it was kept. Without a shared store this is
 * the pipeline's own turns alone, read at the door for the retry budget's sake.
 */
import { EARLY_MS, GRACE_MS, type KeptTurns } from '../core/queueing/kept-turns.ts';
import type { TurnStanding } from '../core/queueing/kept-turns.ts';
import type { Rejection } from '../core/request/decision.ts';
import type { LlmRequest } from '../core/request/request.ts';
import type { Ms } from '../core/request/units.ts';
import type { SharedStore, TurnEnd } from './shared/shared-store.ts';

/** Where a retry stands at its turn: kept `here`, or taken or found in the shared store. */
export interface TurnLookup {
  readonly standing: TurnStanding;
  readonly here: boolean;
}

export class SharedTurns {
  /** The store the replicas share; undefined: this process alone (the pipeline's turns). */
  readonly #store: SharedStore | undefined;
  /** This replica, as it names itself in the ends it tells. */
  readonly #replica: string;
  readonly #turns: () => KeptTurns | undefined;
  /** Hearing the ends of turns, once asked to (undefined again after a watch that failed). */
  #watched: Promise<unknown> | undefined;

  constructor(store: SharedStore | undefined, replica: string, turns: () => KeptTurns | undefined) {
    this.#store = store;
    this.#replica = replica;
    this.#turns = turns;
  }

  /**
   * Where the retry `req` stands at a turn kept for it: here, or — with a shared store — at one
   * another replica kept, taken from the store when due. Undefined: none is kept.
   */
  async lookup(req: LlmRequest, nowMs: Ms): Promise<TurnLookup | undefined> {
    const key = req.idempotencyKey;
    const turns = this.#turns();
    if (key === undefined || turns === undefined) return undefined;
    const here = turns.standing(key, nowMs);
    if (here !== undefined) return { standing: here, here: true };
    if (this.#store === undefined) return undefined;
    this.#watch();
    const standing = await this.#store
      .takeTurn(req.tenant, key, EARLY_MS, this.#replica)
      .catch(() => undefined);
    return standing === undefined ? undefined : { standing, here: false };
  }

  /**
   * The pipeline decided `req`, which stood at `turn`: admitted, or refused as `told` says.
   * The shared store keeps the turn it kept and ends the one it held.
   */
  decided(req: LlmRequest, turn: TurnLookup | undefined, told?: Rejection): void {
    const store = this.#store;
    const key = req.idempotencyKey;
    if (store === undefined || key === undefined || this.#turns() === undefined) return;
    const standing = turn?.standing;
    if (told?.keptTurn === true) {
      // Early for a turn, it was told the time left: the turn stands where it was kept.
      if (standing?.due === false) return;
      this.#watch();
      const inMs = told.retryAfterMs ?? 0;
      void store.keepTurn(req.tenant, key, inMs, GRACE_MS).catch(() => {});
      return;
    }
    // None held; or taken from the store, its end told then.
    if (turn === undefined || (!turn.here && turn.standing.due)) return;
    const outcome = told === undefined || turn.standing.due ? 'claimed' : 'dropped';
    void store.endTurn(req.tenant, key, outcome, this.#replica).catch(() => {});
  }

  /**
   * Hears the ends other replicas tell of the turns kept here, for as long as the store is open
   * (its close ends the watch); tried again after a failure.
   */
  #watch(): void {
    const store = this.#store;
    if (store === undefined || this.#watched !== undefined) return;
    this.#watched = store
      .watchTurns((end) => this.#heard(end))
      .catch(() => {
        this.#watched = undefined;
      });
  }

  #heard(end: TurnEnd): void {
    // This replica settled its own count as it ended the turn.
    if (end.by === this.#replica) return;
    const turns = this.#turns();
    if (end.outcome === 'claimed') turns?.claim(end.key);
    else turns?.forget(end.key);
  }
}
