/**
 * The failure policy for shared state: a primary store (Redis) watched by a PING on a fixed
 * period, and what to do while it is unreachable. `open`: serve from the fallback (an in-memory
 * store enforcing a conservative local share of each quota); `closed`: refuse with
 * `SharedStoreUnavailable` (the gateway's 503 `service_capacity`). The store is marked down by
 * the first failed operation or ping, and up again only by a ping, so a dead primary costs
 * requests no timeouts; `onChange` fires once per transition. Handles come from the store that
 * granted them, so a lease taken in Redis is released in Redis. A kept response is the
 * exception to `open`: one kept while the primary was down is found in the fallback, but any
 * other may be in the primary, so its load or delete is refused with `SharedStoreUnavailable`
 * rather than answered "none"; when the primary is back, those kept in the fallback move to it.
 * So do the idempotency keys the fallback took: an answered one is kept in the primary for
 * replay, one in flight is claimed there and settled there when its request ends, so a retry
 * that reaches another gateway replays it instead of running it again. A key the primary
 * already holds (another gateway's, taken before the outage) stays as the primary has it.
 * A stream's events are the primary's alone (see `appendEvents`).
 */
import type { Clock } from '../../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../../core/ports/timers.ts';
import type { Ms } from '../../core/request/units.ts';
import type { MemoryStore } from './memory-store.ts';
import { keyOf } from './response-shelf.ts';
import {
  SharedStoreUnavailable,
  type Claim,
  type ClaimHold,
  type QuotaVerdict,
  type SharedStore,
  type TenantAsk,
  type Told,
  type TurnEnd,
} from './shared-store.ts';

export type FailurePolicy = 'open' | 'closed';

/** A fallback's "none", which says nothing of what the primary holds. */
const NOT_HERE = Symbol('not here');

export interface FailoverOptions {
  readonly primary: SharedStore;
  readonly fallback: MemoryStore;
  readonly policy: FailurePolicy;
  readonly clock: Clock;
  readonly timers: Timers;
  /** Period of the health PING, up or down. */
  readonly pingEveryMs?: Ms;
  /** The primary became reachable (`up`) or unreachable; `cause` says why it went down. */
  readonly onChange?: (up: boolean, cause?: string) => void;
}

export class FailoverStore implements SharedStore {
  readonly #o: FailoverOptions;
  readonly #every: Ms;
  #up = true;
  #timer: TimerHandle | null = null;
  #closed = false;
  /** The primary's claims on keys still in flight in the fallback, by `keyOf`. */
  readonly #rehomedKeys = new Map<string, ClaimHold>();

  constructor(o: FailoverOptions) {
    this.#o = o;
    this.#every = o.pingEveryMs ?? 1_000;
  }

  get up(): boolean {
    return this.#up;
  }

  /** Checks the primary once (so the first state is known), then keeps checking. */
  async start(): Promise<void> {
    await this.#check();
    this.#schedule();
  }

  admit(ask: TenantAsk): Promise<QuotaVerdict> {
    return this.#route((s) => s.admit(ask));
  }

  /**
   * A key the fallback took while the primary was down is the fallback's still: its answer is
   * replayed, and one in flight there is in flight, rather than run again through the primary.
   */
  async claim(tenant: string, key: string, fingerprint: string): Promise<Claim> {
    const { fallback } = this.#o;
    return (
      fallback.held(tenant, key, fingerprint) ??
      this.#route(async (s) => {
        const claim = await s.claim(tenant, key, fingerprint);
        return s === fallback ? this.#mirrored(keyOf(tenant, key), claim) : claim;
      })
    );
  }

  /**
   * A claim the fallback granted, whose end is told to the primary too once the key has moved
   * there (`#rehome`): its answer kept for replay, or the key let go.
   */
  #mirrored(at: string, claim: Claim): Claim {
    if (claim.kind !== 'claimed') return claim;
    const settle = async (end: (h: ClaimHold) => Promise<void>) => {
      await end(claim.hold);
      const moved = this.#rehomedKeys.get(at);
      if (moved === undefined) return;
      this.#rehomedKeys.delete(at);
      // Unreachable again: the primary's claim lapses with its TTL.
      await end(moved).catch((e: unknown) => this.#mark(false, e));
    };
    return {
      kind: 'claimed',
      hold: {
        complete: (response) => settle((h) => h.complete(response)),
        abandon: () => settle((h) => h.abandon()),
      },
    };
  }

  saveResponse(tenant: string, id: string, text: string): Promise<boolean> {
    return this.#route((s) => s.saveResponse(tenant, id, text));
  }

  loadResponse(tenant: string, id: string): Promise<string | undefined> {
    const op = async (s: SharedStore) => (await s.loadResponse(tenant, id)) ?? NOT_HERE;
    return this.#routeOrKnown<string | undefined>(op, undefined);
  }

  loadResponsePrefix(tenant: string, id: string, chars: number): Promise<string | undefined> {
    const op = async (s: SharedStore) =>
      (await s.loadResponsePrefix(tenant, id, chars)) ?? NOT_HERE;
    return this.#routeOrKnown<string | undefined>(op, undefined);
  }

  deleteResponse(tenant: string, id: string): Promise<boolean> {
    const op = async (s: SharedStore) => (await s.deleteResponse(tenant, id)) || NOT_HERE;
    return this.#routeOrKnown<boolean>(op, false);
  }

  /**
   * Only to the primary, whatever the policy: a log begun there and gone on in the fallback
   * would number its events wrong. Its writer holds them until the primary is back.
   */
  appendEvents(tenant: string, id: string, events: readonly string[]): Promise<void> {
    return this.#primaryOnly(() => this.#o.primary.appendEvents(tenant, id, events));
  }

  readEvents(tenant: string, id: string, from: number, max: number): Promise<readonly string[]> {
    const op = async (s: SharedStore) => {
      const events = await s.readEvents(tenant, id, from, max);
      return events.length > 0 ? events : NOT_HERE;
    };
    return this.#routeOrKnown<readonly string[]>(op, []);
  }

  /** The primary's log alone is watched: while it is down, readers read the fallback's. */
  async watchEvents(tenant: string, id: string, told: Told): Promise<() => void> {
    if (!this.#up) throw this.#unavailable();
    return this.#o.primary.watchEvents(tenant, id, told);
  }

  beat(replica: string, ttlMs: number, serving: boolean): Promise<void> {
    return this.#route((s) => s.beat(replica, ttlMs, serving));
  }

  /** Only the primary knows the other replicas: while it is down, none serves. */
  async serving(): Promise<readonly string[]> {
    return this.#primaryOr(() => this.#o.primary.serving(), []);
  }

  /** Ticks are the primary's alone: while it is down, each replica decides on its own. */
  postWindow(replica: string, text: string, ttlMs: number): Promise<void> {
    return this.#primaryOnly(() => this.#o.primary.postWindow(replica, text, ttlMs));
  }

  windows(): Promise<ReadonlyMap<string, string>> {
    return this.#primaryOr(() => this.#o.primary.windows(), new Map<string, string>());
  }

  /** Orders are the primary's alone: while it is down, none is handed over or taken. */
  handOver(order: string): Promise<void> {
    return this.#primaryOnly(() => this.#o.primary.handOver(order));
  }

  /** Orders are the primary's alone: while it is down, none is kept. */
  keepOrder(tenant: string, id: string, order: string): Promise<void> {
    return this.#primaryOr(() => this.#o.primary.keepOrder(tenant, id, order), undefined);
  }

  takeOrder(tenant: string, id: string): Promise<string | undefined> {
    return this.#primaryOr(() => this.#o.primary.takeOrder(tenant, id), undefined);
  }

  dropOrder(tenant: string, id: string): Promise<void> {
    return this.#primaryOr(() => this.#o.primary.dropOrder(tenant, id), undefined);
  }

  /** Only the primary can say who settles: while it is down, none does (none is lost then). */
  settling(tenant: string, id: string, ttlMs: number): Promise<boolean> {
    return this.#primaryOr(() => this.#o.primary.settling(tenant, id, ttlMs), false);
  }

  /**
   * Turns are the primary's alone: while it is down none is kept there or found, and a retry is
   * judged where it lands as a new request (the replica that kept its turn counts it till then).
   */
  keepTurn(tenant: string, key: string, inMs: Ms, graceMs: Ms): Promise<void> {
    return this.#primaryOr(() => this.#o.primary.keepTurn(tenant, key, inMs, graceMs), undefined);
  }

  takeTurn(tenant: string, key: string, earlyMs: Ms, by: string) {
    return this.#primaryOr(() => this.#o.primary.takeTurn(tenant, key, earlyMs, by), undefined);
  }

  endTurn(tenant: string, key: string, outcome: TurnEnd['outcome'], by: string): Promise<void> {
    return this.#primaryOr(() => this.#o.primary.endTurn(tenant, key, outcome, by), undefined);
  }

  /** The primary's ends alone are told: while it is down, the watch is refused. */
  async watchTurns(told: (end: TurnEnd) => void): Promise<() => void> {
    if (!this.#up) throw this.#unavailable();
    return this.#o.primary.watchTurns(told);
  }

  takeHandedOver(max: number): Promise<readonly string[]> {
    return this.#primaryOr(() => this.#o.primary.takeHandedOver(max), []);
  }

  /** `op` on the primary; `SharedStoreUnavailable` while it is down, whatever the policy. */
  async #primaryOnly(op: () => Promise<void>): Promise<void> {
    if (!this.#up) throw this.#unavailable();
    try {
      await op();
    } catch (e) {
      this.#mark(false, e);
      throw this.#unavailable();
    }
  }

  /** `op` on the primary; `none` while it is down. */
  async #primaryOr<T>(op: () => Promise<T>, none: T): Promise<T> {
    if (!this.#up) return none;
    try {
      return await op();
    } catch (e) {
      this.#mark(false, e);
      return none;
    }
  }

  /** Only the primary can say a replica is gone: while it is down, every one is alive. */
  alive(replica: string): Promise<boolean> {
    return this.#primaryOr(() => this.#o.primary.alive(replica), true);
  }

  async ping(): Promise<void> {
    if (!this.#up && this.#o.policy === 'closed') throw this.#unavailable();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#timer?.cancel();
    await Promise.all([this.#o.primary.close(), this.#o.fallback.close()]);
  }

  async #route<T>(op: (s: SharedStore) => Promise<T>): Promise<T> {
    if (this.#up) {
      try {
        return await op(this.#o.primary);
      } catch (e) {
        this.#mark(false, e);
      }
    }
    if (this.#o.policy === 'closed') throw this.#unavailable();
    return op(this.#o.fallback);
  }

  /**
   * `op` on the primary, then on the fallback when the primary holds no answer (`op` says
   * `NOT_HERE`): a response kept during an outage is found after it too; `none` when neither
   * holds one. While the primary is down, a fallback with no answer is no answer: the primary
   * may hold one.
   */
  async #routeOrKnown<T>(
    op: (s: SharedStore) => Promise<T | typeof NOT_HERE>,
    none: T,
  ): Promise<T> {
    if (this.#up) {
      try {
        const answer = await op(this.#o.primary);
        if (answer !== NOT_HERE) return answer;
      } catch (e) {
        this.#mark(false, e);
      }
    }
    if (!this.#up && this.#o.policy === 'closed') throw this.#unavailable();
    const answer = await op(this.#o.fallback);
    if (answer !== NOT_HERE) return answer;
    if (!this.#up) throw this.#unavailable();
    return none;
  }

  #unavailable(): SharedStoreUnavailable {
    return new SharedStoreUnavailable(this.#every);
  }

  async #check(): Promise<void> {
    try {
      await this.#o.primary.ping();
      this.#mark(true);
    } catch (e) {
      this.#mark(false, e);
    }
  }

  #schedule(): void {
    if (this.#closed) return;
    this.#timer = this.#o.timers.at(this.#o.clock.now() + this.#every, () => {
      this.#timer = null;
      void this.#check().then(() => this.#schedule());
    });
  }

  #mark(up: boolean, cause?: unknown): void {
    if (up === this.#up || this.#closed) return;
    this.#up = up;
    this.#o.onChange?.(up, cause === undefined ? undefined : describe(cause));
    if (up) void this.#rehome();
  }

  /**
   * What the fallback took while the primary was down, moved to the primary now it is back, so
   * every replica finds it again: the responses it kept (each kept a whole TTL from now; one the
   * primary cannot take stays where it is, and is still found here), and its idempotency keys.
   */
  async #rehome(): Promise<void> {
    const { primary, fallback } = this.#o;
    try {
      for (const { tenant, id, text } of fallback.keptResponses()) {
        if (await primary.saveResponse(tenant, id, text)) await fallback.deleteResponse(tenant, id);
      }
      for (const { tenant, id, fingerprint, response } of fallback.heldKeys()) {
        const claim = await primary.claim(tenant, id, fingerprint);
        if (claim.kind !== 'claimed') continue;
        // Its request may have ended while the primary answered.
        const now = fallback.held(tenant, id, fingerprint);
        const answer = now?.kind === 'done' ? now.response : response;
        if (answer !== undefined) await claim.hold.complete(answer);
        else if (now?.kind === 'in_flight') this.#rehomedKeys.set(keyOf(tenant, id), claim.hold);
        else await claim.hold.abandon();
      }
    } catch (e) {
      this.#mark(false, e);
    }
  }
}

function describe(e: unknown): string {
  if (e instanceof AggregateError && e.errors.length > 0) return describe(e.errors[0]);
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}
