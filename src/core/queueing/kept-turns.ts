/**
 * Kept turns: a request refused for its wait (503 `deadline`) that carries an Idempotency-Key
 * keeps its place in line, so its Retry-After is when a retry will be admitted rather than when
 * it may try its luck against every new arrival. Its turn comes when the queue ahead — the
 * requests queued and the turns kept before it — has drained to what admission takes (the
 * deadline gate's Retry-After, with the turns counted as queued work). Until then each turn
 * counts as a request queued ahead of any new one of its band or lower, so new arrivals are
 * refused, and kept turns of their own, while the turns kept earlier come back to room made for
 * them: a waiting room whose clients wait at home, not on an open connection.
 *
 * A client that does not come back leaves its room empty. Turns are counted at the share of
 * clients that did come back (`returnRatio`, a moving average over turns claimed and turns that
 * ran out; 1 until a turn ends), so a fleet whose clients never retry keeps no room for them. A
 * retry comes back *due* from 100 ms before its turn to `GRACE_MS` after; no turn is counted
 * ahead of it, and it is judged like any request (the queue-delay target, the slack at the sure
 * wait), so a turn never admits what admission would not. One that comes early is judged as a new
 * request and, refused, told the time left to its turn.
 *
 * Deterministic: time comes with each call, and the turns are ordered by when they run out.
 */
import type { Rejection } from '../request/decision.ts';
import type { LlmRequest } from '../request/request.ts';
import type { Ms } from '../request/units.ts';
import { BinaryHeap } from '../stats/binary-heap.ts';
import type { QueueView } from './queue-view.ts';

/** How late after its turn a retry still claims it (a client's backoff jitter, a slow network). */
export const GRACE_MS: Ms = 2_000;
/** How early a retry may come for its turn: the rounding of Retry-After and clocks. */
export const EARLY_MS: Ms = 100;
/** Weight of each turn's end (claimed or run out) in the share of clients that come back. */
const RETURN_WEIGHT = 1 / 16;
/** The most turns kept at once; beyond, a refusal keeps none (its Retry-After is the queue's). */
const MAX_TURNS = 100_000;

interface Turn {
  readonly key: string;
  readonly priority: number;
  readonly tenant: string;
  readonly dueMs: Ms;
  readonly endsMs: Ms;
  readonly seq: number;
}

/** A retry's standing at its arrival: its turn has come, or comes in `inMs`. */
export type TurnStanding = { readonly due: true } | { readonly due: false; readonly inMs: Ms };

/** What the wait model reads: the turns a new request waits behind. */
export interface TurnsView {
  /**
   * The turns a new request of `tenant` in the band of `priority` waits behind, weighted by the
   * share of clients that come back: those of the bands above, and in its own those the band's
   * order (`order.before`) puts before it — in a fair band, those of tenants that have had no
   * more weighted service. Without `tenant` or `order`: every turn of its band.
   */
  ahead(priority: number, nowMs: Ms, tenant?: string, order?: Pick<QueueView, 'before'>): number;
}

export class KeptTurns implements TurnsView {
  /** A Retry-After this long says the queue is past what can be told: no turn is kept. */
  readonly #maxRetryAfterMs: Ms;
  readonly #turns = new Map<string, Turn>();
  readonly #byEnd = new BinaryHeap<Turn>(
    (a, b) => a.endsMs < b.endsMs || (a.endsMs === b.endsMs && a.seq < b.seq),
  );
  /** Turns kept per band priority, per tenant. */
  readonly #perBand = new Map<number, Map<string, number>>();
  #seq = 0;
  #returnRatio = 1;
  /** Turns kept, claimed by their retry, and run out unclaimed, since the start. */
  keptTotal = 0;
  claimed = 0;
  lapsed = 0;

  constructor(maxRetryAfterMs: Ms) {
    this.#maxRetryAfterMs = maxRetryAfterMs;
  }

  /** The share of clients that came back for their turn (a moving average). */
  get returnRatio(): number {
    return this.#returnRatio;
  }

  /** Turns kept now. */
  get size(): number {
    return this.#turns.size;
  }

  /** Itself, the turns whose grace ended by `nowMs` gone: as a host's metrics read it. */
  asOf(nowMs: Ms): this {
    this.#lapse(nowMs);
    return this;
  }

  ahead(priority: number, nowMs: Ms, tenant?: string, order?: Pick<QueueView, 'before'>): number {
    this.#lapse(nowMs);
    let n = 0;
    for (const [band, tenants] of this.#perBand) {
      if (band > priority) continue;
      const all = band < priority || tenant === undefined || order === undefined;
      for (const [t, count] of tenants) if (all || order.before(band, t, tenant)) n += count;
    }
    return n * this.#returnRatio;
  }

  /** Where the retry with `key` stands at `nowMs`; undefined when it holds no turn. */
  standing(key: string, nowMs: Ms): TurnStanding | undefined {
    this.#lapse(nowMs);
    const turn = this.#turns.get(key);
    if (turn === undefined) return undefined;
    const inMs = turn.dueMs - nowMs;
    return inMs <= EARLY_MS ? { due: true } : { due: false, inMs };
  }

  /**
   * The request with `key` of `tenant` was refused at `nowMs` and told to come back in
   * `retryAfterMs`: it keeps a turn then, in the band of `priority` (replacing any it held).
   * False when none is kept: the wait is past what a Retry-After tells, or too many are kept.
   */
  keep(key: string, priority: number, tenant: string, nowMs: Ms, retryAfterMs: Ms): boolean {
    this.#lapse(nowMs);
    this.#drop(key);
    if (retryAfterMs >= this.#maxRetryAfterMs || this.#turns.size >= MAX_TURNS) return false;
    const dueMs = nowMs + retryAfterMs;
    const turn = { key, priority, tenant, dueMs, endsMs: dueMs + GRACE_MS, seq: this.#seq++ };
    this.#turns.set(key, turn);
    this.#byEnd.push(turn);
    let band = this.#perBand.get(priority);
    if (band === undefined) this.#perBand.set(priority, (band = new Map()));
    band.set(tenant, (band.get(tenant) ?? 0) + 1);
    this.keptTotal++;
    return true;
  }

  /** The retry with `key` was admitted: its client came back, and its turn is used. */
  claim(key: string): void {
    if (!this.#drop(key)) return;
    this.claimed++;
    this.#returnRatio += RETURN_WEIGHT * (1 - this.#returnRatio);
  }

  /** The retry with `key` was refused for good: its turn is dropped, its client not counted. */
  forget(key: string): void {
    this.#drop(key);
  }

  /** Turns whose grace ended by `nowMs` are gone, their clients counted as not back. */
  #lapse(nowMs: Ms): void {
    for (let top = this.#byEnd.peek(); top !== undefined && top.endsMs <= nowMs;) {
      this.#byEnd.pop();
      if (this.#turns.get(top.key) === top) {
        this.#drop(top.key);
        this.lapsed++;
        this.#returnRatio -= RETURN_WEIGHT * this.#returnRatio;
      }
      top = this.#byEnd.peek();
    }
  }

  #drop(key: string): boolean {
    const turn = this.#turns.get(key);
    if (turn === undefined) return false;
    this.#turns.delete(key);
    const band = this.#perBand.get(turn.priority);
    const left = (band?.get(turn.tenant) ?? 1) - 1;
    if (left > 0) band?.set(turn.tenant, left);
    else band?.delete(turn.tenant);
    if (band?.size === 0) this.#perBand.delete(turn.priority);
    // Its heap entry stays until it runs out, skipped then as no longer the key's turn.
    return true;
  }
}

/**
 * `told`, the refusal of `asked` as its client is told it, with its turn kept: a refusal for its
 * wait with a Retry-After keeps the request a turn at that Retry-After, when its deadline could
 * still be made had it been admitted now (its slack ≥ 0, judged at the sure wait, the turns ahead
 * included: so turns are kept no further out than the class's time to first token). A retry that
 * came early for the turn it holds (`standing`) is told the time left to it instead; one that
 * came when told has come back, whatever it is told now.
 */
export function keepTurn(
  turns: KeptTurns | undefined,
  told: Rejection,
  asked: LlmRequest,
  priority: number,
  nowMs: Ms,
  standing: TurnStanding | undefined,
): Rejection {
  const key = asked.idempotencyKey;
  if (turns === undefined || key === undefined) return told;
  if (standing?.due === true) turns.claim(key);
  const after = told.retryAfterMs;
  if (told.reason !== 'deadline' || after === undefined) {
    turns.forget(key);
    return told;
  }
  if (standing?.due === false) {
    return { ...told, retryAfterMs: Math.ceil(standing.inMs / 100) * 100, keptTurn: true };
  }
  const kept =
    (told.assessment?.slackMs ?? 0) >= 0 && turns.keep(key, priority, asked.tenant, nowMs, after);
  return kept ? { ...told, keptTurn: true } : told;
}

/** Whether the retry with `key` comes for a kept turn that has come: it was invited. */
export function turnHasCome(turns: KeptTurns | undefined, key: string | undefined, nowMs: Ms) {
  return key !== undefined && turns?.standing(key, nowMs)?.due === true;
}
