/**
 * The shared state of one gateway process, in memory: the default store, and the failover
 * store's fallback when Redis is unreachable. Its tenant accounting is the core's own ledger
 * (core/admission/budget/tenant-ledger.ts) — the one the simulator uses — so one process behaves
 * the same with or without Redis, and as the simulator predicts. As a
 * fallback it enforces a conservative share of each quota — the limit divided by the number of
 * replicas — since each replica then counts alone. Memory is bounded: one entry per tenant the
 * policy names, at most `replayCapacity` idempotency keys and `replayBytes` of their answers a
 * tenant (each tenant's of its own, so one tenant's flood of keys forgets only its own:
 * replay-keys.ts), and at most `responseCapacityBytes` of kept responses (response-shelf.ts).
 */
import { TenantLedger } from '../../core/admission/budget/tenant-ledger.ts';
import type { Clock } from '../../core/ports/clock.ts';
import type { Ms } from '../../core/request/units.ts';
import { BoundedMap } from '../bounded-map.ts';
import { REPLAY_BYTES, ReplayKeys, type KeyState } from './replay-keys.ts';
import { ResponseShelf, keyOf } from './response-shelf.ts';
import {
  RESPONSE_TTL_MS,
  type Claim,
  type QuotaVerdict,
  type SharedStore,
  type StoredResponse,
  type TenantAsk,
  type Told,
  type TurnEnd,
  replayed,
} from './shared-store.ts';
import type { TurnStanding } from '../../core/queueing/kept-turns.ts';

/** An idempotency key this store holds: in flight, or answered with `response`. */
export interface HeldKey {
  readonly tenant: string;
  readonly id: string;
  readonly fingerprint: string;
  readonly response?: StoredResponse;
}

export interface MemoryStoreOptions {
  readonly clock: Clock;
  /** Replicas that share the quotas: each limit is divided by it (1: the whole limit). */
  readonly replicas?: number;
  /** How long a completed answer is replayed. */
  readonly replayTtlMs?: Ms;
  /** The most idempotency keys a tenant holds (default: 10,000), its oldest let go first. */
  readonly replayCapacity?: number;
  /** The most bytes their answers hold, a tenant (default: 64 MiB), its oldest let go first. */
  readonly replayBytes?: number;
  /** How long a kept response is kept. */
  readonly responseTtlMs?: Ms;
  /** The most bytes of kept responses held (default: 256 MiB). */
  readonly responseCapacityBytes?: number;
}

/** The most orders handed over one process holds. */
const MAX_ORDERS = 10_000;
/** The most kept turns one process holds, as the core's own count keeps at most. */
const MAX_TURNS = 100_000;

/** What kept responses may hold in one process unless told otherwise. */
export const RESPONSE_CAPACITY_BYTES = 256 * 1024 * 1024;

export class MemoryStore implements SharedStore {
  readonly #clock: Clock;
  readonly #ledger: TenantLedger;
  /** Each tenant's idempotency keys, of its own: a tenant's flood forgets only its own. */
  readonly #keys = new Map<string, ReplayKeys>();
  readonly #replay: { readonly capacity: number; readonly ttlMs: Ms; readonly bytes: number };
  readonly #responses: ResponseShelf;
  /** Until when each replica that beat is alive: one entry a replica, few in a process. */
  readonly #beats = new Map<string, number>();
  /** Each replica's last autoscaling tick, and until when it holds. */
  readonly #windows = new Map<string, { readonly text: string; readonly untilMs: number }>();
  /** Who watches each log (`keyOf`): one entry a log followed here. */
  readonly #watchers = new Map<string, Set<Told>>();
  /** Until when each replica that said it serves does so. */
  readonly #serving = new Map<string, number>();
  /** Orders handed over, oldest first, each kept until `untilMs`. */
  readonly #orders: { readonly order: string; readonly untilMs: number }[] = [];
  readonly #responseTtlMs: Ms;
  /** The orders of background responses queued (`keyOf`), the oldest let go first. */
  readonly #kept: BoundedMap<string>;
  /** Until when each record being settled is held (`keyOf`; those past, pruned). */
  readonly #settling = new Map<string, number>();
  /** Kept turns (`keyOf`): when each is due, and until when it is held. */
  readonly #turns = new Map<string, { readonly dueMs: Ms; readonly endsMs: Ms }>();
  /** Who is told each turn's end. */
  readonly #turnWatchers = new Set<(end: TurnEnd) => void>();

  constructor(o: MemoryStoreOptions) {
    this.#clock = o.clock;
    this.#ledger = new TenantLedger({ replicas: o.replicas });
    this.#replay = {
      capacity: o.replayCapacity ?? 10_000,
      ttlMs: o.replayTtlMs ?? 600_000,
      bytes: o.replayBytes ?? REPLAY_BYTES,
    };
    this.#responseTtlMs = o.responseTtlMs ?? RESPONSE_TTL_MS;
    this.#kept = new BoundedMap(MAX_ORDERS, this.#responseTtlMs);
    this.#responses = new ResponseShelf(
      this.#responseTtlMs,
      o.responseCapacityBytes ?? RESPONSE_CAPACITY_BYTES,
    );
  }

  async admit(ask: TenantAsk): Promise<QuotaVerdict> {
    const verdict = this.#ledger.admit(ask, this.#clock.now());
    if (!verdict.ok) return verdict;
    const { lease, ...standing } = verdict;
    return {
      ...standing,
      lease: {
        release: async (usedTokens = ask.tokens) =>
          this.#ledger.release(lease, usedTokens, this.#clock.now()),
      },
    };
  }

  /**
   * What this store holds of key `id`, without claiming it: its answer, in flight, or bound to
   * another request; undefined when it holds nothing of it.
   */
  held(tenant: string, id: string, fingerprint: string): Claim | undefined {
    const state = this.#keys.get(tenant)?.get(id, this.#clock.now());
    if (state == null) return undefined;
    if (state.fingerprint !== fingerprint) return { kind: 'mismatch' };
    return state.response === undefined
      ? { kind: 'in_flight' }
      : { kind: 'done', response: state.response };
  }

  async claim(tenant: string, id: string, fingerprint: string): Promise<Claim> {
    const held = this.held(tenant, id, fingerprint);
    if (held !== undefined) return held;
    let keys = this.#keys.get(tenant);
    if (keys === undefined) {
      keys = new ReplayKeys(this.#replay.capacity, this.#replay.ttlMs, this.#replay.bytes);
      this.#keys.set(tenant, keys);
    }
    const now = this.#clock.now();
    const mine: KeyState = { fingerprint };
    keys.set(id, mine, now);
    // Only the holder's own entry is ever replaced: an evicted key claimed again is not touched.
    const settle = (next: KeyState) => {
      if (keys.get(id, this.#clock.now()) === mine) keys.set(id, next, this.#clock.now());
    };
    return {
      kind: 'claimed',
      hold: {
        complete: async (response) => settle({ fingerprint, response: replayed(response) }),
        abandon: async () => settle(null),
      },
    };
  }

  async saveResponse(tenant: string, id: string, text: string): Promise<boolean> {
    return this.#responses.save(tenant, id, text, this.#clock.now());
  }

  async loadResponse(tenant: string, id: string): Promise<string | undefined> {
    return this.#responses.load(tenant, id, this.#clock.now());
  }

  async loadResponsePrefix(tenant: string, id: string, chars: number): Promise<string | undefined> {
    return this.#responses.load(tenant, id, this.#clock.now())?.slice(0, chars);
  }

  async deleteResponse(tenant: string, id: string): Promise<boolean> {
    return this.#responses.delete(tenant, id, this.#clock.now());
  }

  async appendEvents(tenant: string, id: string, events: readonly string[]): Promise<void> {
    const from = this.#responses.append(tenant, id, events, this.#clock.now());
    if (from < 0) return;
    for (const told of this.#watchers.get(keyOf(tenant, id)) ?? []) told(from, events);
  }

  async readEvents(
    tenant: string,
    id: string,
    from: number,
    max: number,
  ): Promise<readonly string[]> {
    return this.#responses.events(tenant, id, from, max, this.#clock.now());
  }

  /** The idempotency keys held, in flight or answered (`response`), with their tenant. */
  heldKeys(): readonly HeldKey[] {
    const now = this.#clock.now();
    const held: HeldKey[] = [];
    for (const [tenant, keys] of this.#keys) {
      for (const [id, { fingerprint, response }] of keys.held(now)) {
        held.push({ tenant, id, fingerprint, ...(response === undefined ? {} : { response }) });
      }
    }
    return held;
  }

  /** The kept responses not yet past their TTL, oldest first, with their tenant and id. */
  keptResponses(): Iterable<{
    readonly tenant: string;
    readonly id: string;
    readonly text: string;
  }> {
    return [...this.#responses.kept(this.#clock.now())];
  }

  /** The kept responses this process holds: how many, and their bytes. */
  get kept(): { readonly count: number; readonly bytes: number } {
    return { count: this.#responses.size, bytes: this.#responses.bytes };
  }

  async watchEvents(tenant: string, id: string, told: Told): Promise<() => void> {
    const key = keyOf(tenant, id);
    const watchers = this.#watchers.get(key) ?? new Set();
    this.#watchers.set(key, watchers.add(told));
    return () => {
      watchers.delete(told);
      if (watchers.size === 0) this.#watchers.delete(key);
    };
  }

  async beat(replica: string, ttlMs: number, serving: boolean): Promise<void> {
    const until = this.#clock.now() + ttlMs;
    this.#beats.set(replica, until);
    if (serving) this.#serving.set(replica, until);
    else this.#serving.delete(replica);
  }

  async alive(replica: string): Promise<boolean> {
    return (this.#beats.get(replica) ?? -Infinity) > this.#clock.now();
  }

  async serving(): Promise<readonly string[]> {
    const now = this.#clock.now();
    return [...this.#serving].filter(([, until]) => until > now).map(([replica]) => replica);
  }

  async postWindow(replica: string, text: string, ttlMs: number): Promise<void> {
    this.#windows.set(replica, { text, untilMs: this.#clock.now() + ttlMs });
  }

  async windows(): Promise<ReadonlyMap<string, string>> {
    const now = this.#clock.now();
    for (const [replica, w] of this.#windows) if (w.untilMs <= now) this.#windows.delete(replica);
    return new Map([...this.#windows].map(([replica, w]) => [replica, w.text]));
  }

  async handOver(order: string): Promise<void> {
    const now = this.#clock.now();
    while (this.#orders.length > 0 && this.#orders[0].untilMs <= now) this.#orders.shift();
    // Full, the oldest goes: its response is taken for lost, as its replica's are.
    if (this.#orders.length >= MAX_ORDERS) this.#orders.shift();
    this.#orders.push({ order, untilMs: now + this.#responseTtlMs });
  }

  async keepOrder(tenant: string, id: string, order: string): Promise<void> {
    this.#kept.set(keyOf(tenant, id), order, this.#clock.now());
  }

  async takeOrder(tenant: string, id: string): Promise<string | undefined> {
    const key = keyOf(tenant, id);
    const order = this.#kept.get(key, this.#clock.now());
    this.#kept.delete(key);
    return order;
  }

  async dropOrder(tenant: string, id: string): Promise<void> {
    this.#kept.delete(keyOf(tenant, id));
  }

  async settling(tenant: string, id: string, ttlMs: number): Promise<boolean> {
    const key = keyOf(tenant, id);
    const now = this.#clock.now();
    if ((this.#settling.get(key) ?? -Infinity) > now) return false;
    if (this.#settling.size >= MAX_ORDERS)
      for (const [k, until] of this.#settling) if (until <= now) this.#settling.delete(k);
    this.#settling.set(key, now + ttlMs);
    return true;
  }

  async keepTurn(tenant: string, key: string, inMs: Ms, graceMs: Ms): Promise<void> {
    const now = this.#clock.now();
    if (this.#turns.size >= MAX_TURNS)
      for (const [k, t] of this.#turns) if (t.endsMs <= now) this.#turns.delete(k);
    // Full: none is kept here; the replica that kept it still counts it until it runs out.
    if (this.#turns.size >= MAX_TURNS) return;
    this.#turns.set(keyOf(tenant, key), { dueMs: now + inMs, endsMs: now + inMs + graceMs });
  }

  async takeTurn(
    tenant: string,
    key: string,
    earlyMs: Ms,
    by: string,
  ): Promise<TurnStanding | undefined> {
    const k = keyOf(tenant, key);
    const turn = this.#turns.get(k);
    const now = this.#clock.now();
    if (turn === undefined || turn.endsMs <= now) {
      this.#turns.delete(k);
      return undefined;
    }
    const inMs = turn.dueMs - now;
    if (inMs > earlyMs) return { due: false, inMs: Math.ceil(inMs) };
    this.#turns.delete(k);
    for (const told of this.#turnWatchers) told({ by, outcome: 'claimed', tenant, key });
    return { due: true };
  }

  async endTurn(tenant: string, key: string, outcome: TurnEnd['outcome'], by: string) {
    if (!this.#turns.delete(keyOf(tenant, key))) return;
    for (const told of this.#turnWatchers) told({ by, outcome, tenant, key });
  }

  async watchTurns(told: (end: TurnEnd) => void): Promise<() => void> {
    this.#turnWatchers.add(told);
    return () => void this.#turnWatchers.delete(told);
  }

  async takeHandedOver(max: number): Promise<readonly string[]> {
    const now = this.#clock.now();
    const taken = this.#orders.splice(0, max).filter((o) => o.untilMs > now);
    return taken.map((o) => o.order);
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}
}
