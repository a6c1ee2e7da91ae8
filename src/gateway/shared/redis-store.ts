/**
 * The shared state in Redis, for several gateway replicas: each update is one Lua script (see
 * lua-scripts.ts), so replicas never interleave inside one. Keys are `goodput:{tenant}:…` (redis-keys.ts)
 * and every key has a TTL. Concurrency
 * slots are leases with an expiry in a sorted set, renewed while their request runs, so the
 * slots of a gateway that dies free themselves within one lease TTL. An idempotency key is one
 * string holding its request's fingerprint with its holder or answer (the format is in
 * lua-scripts.ts, with how keys of the earlier format are read). Main rule: this store
 * never throws on its own account and never takes the process down — connection errors are
 * swallowed (the failover store watches `ping`), every command is answered or refused within
 * the command timeout (`#send`), and a handle's methods
 * swallow their errors (a lease or claim left behind expires).
 */
import type { createClient } from 'redis';
import type { Clock } from '../../core/ports/clock.ts';
import type { Timers } from '../../core/ports/timers.ts';
import type { Ms } from '../../core/request/units.ts';
import {
  ADMIT,
  APPEND_EVENTS,
  CLAIM,
  RENEW_LEASE,
  SETTLE_CLAIM,
  SETTLE_BUCKET,
  POST_WINDOW,
  SERVING,
  SERVING_BEAT,
  WINDOWS,
  type LuaScript,
} from './lua-scripts.ts';
import { admitCall, admitReply } from './redis-admit.ts';
import { LogWatch, toldEvents } from './redis-watch.ts';
import { Renewals } from './renewals.ts';
import { RedisTurns } from './redis-turns.ts';
import { LateAnswers, answeredWithin } from './answered-within.ts';
import { gatewayRedisClient } from './redis-client.ts';
import {
  ORDERS_KEY,
  PING_KEY,
  SERVING_KEY,
  WINDOWS_KEY,
  WINDOWS_UNTIL_KEY,
  eventsKey,
  idemKey,
  orderKey,
  replicaKey,
  responseKey,
  settlingKey,
  tenantKeys,
} from './redis-keys.ts';
import {
  NO_LEASE,
  RESPONSE_MAX_BYTES,
  RESPONSE_TTL_MS,
  type Claim,
  type QuotaVerdict,
  type SharedStore,
  type StoredResponse,
  type Told,
  type TenantAsk,
  type TurnEnd,
  replayed,
} from './shared-store.ts';

export interface RedisStoreOptions {
  /** `redis://host:port` (or `rediss://`, with user and password as usual). */
  readonly url: string;
  readonly clock: Clock;
  readonly timers: Timers;
  /** Unique tokens naming idempotency claims. */
  readonly newId: () => string;
  readonly connectTimeoutMs?: Ms;
  readonly commandTimeoutMs?: Ms;
  /** A concurrency lease or in-flight claim not renewed for this long is gone. */
  readonly leaseTtlMs?: Ms;
  /** How long a completed answer is replayed. */
  readonly replayTtlMs?: Ms;
  /** How long a kept response is kept. */
  readonly responseTtlMs?: Ms;
  /** Each connection error (the failover store logs transitions; this is for debugging). */
  readonly onError?: (e: Error) => void;
}

/** How long a closing store waits for the work of answers that came late. */
const LATE_GRACE_MS: Ms = 1_000;

export class RedisStore implements SharedStore {
  readonly #client: ReturnType<typeof createClient>;
  /** Word of the stream logs' growth, on a connection of its own (opened at the first watch). */
  readonly #watch: LogWatch;
  readonly #o: Required<Omit<RedisStoreOptions, 'onError'>>;
  /** The leases and claims this process holds, renewed every third of the lease TTL. */
  readonly #renewals: Renewals;
  /** Kept turns, whose ends are told on the watch's connection. */
  readonly #turns: RedisTurns;
  /** Why the connection last failed: named when a ping finds it down. */
  #lastError: Error | null = null;
  /** Commands answered late, and what their answers set off: a close waits a moment for them. */
  readonly #late = new LateAnswers();

  constructor(o: RedisStoreOptions) {
    this.#o = {
      url: o.url,
      clock: o.clock,
      timers: o.timers,
      newId: o.newId,
      connectTimeoutMs: o.connectTimeoutMs ?? 1_000,
      commandTimeoutMs: o.commandTimeoutMs ?? 500,
      leaseTtlMs: o.leaseTtlMs ?? 30_000,
      replayTtlMs: o.replayTtlMs ?? 600_000,
      responseTtlMs: o.responseTtlMs ?? RESPONSE_TTL_MS,
    };
    this.#renewals = new Renewals(o.clock, o.timers, this.#o.leaseTtlMs);
    this.#client = gatewayRedisClient(o.url, this.#o.connectTimeoutMs, this.#o.commandTimeoutMs);
    const failed = (e: Error) => {
      this.#lastError = e;
      o.onError?.(e);
    };
    this.#client.on('error', failed);
    this.#client.connect().catch(failed);
    const { connectTimeoutMs, commandTimeoutMs } = this.#o;
    this.#watch = new LogWatch(() => gatewayRedisClient(o.url, connectTimeoutMs, commandTimeoutMs));
    this.#turns = new RedisTurns((s, keys, args) => this.#eval(s, keys, args), this.#watch);
  }

  async admit(ask: TenantAsk): Promise<QuotaVerdict> {
    const q = ask.quotas;
    const keys = tenantKeys(ask.tenant);
    const call = admitCall(ask, this.#o.leaseTtlMs);
    // A grant Redis made after the door gave up on it: refused here, so given back there.
    const late = (answer: unknown) => {
      const grant = admitReply(answer, ask);
      return grant.ok ? this.#giveBack(ask, grant.leased, 0) : undefined;
    };
    const reply = admitReply(await this.#eval(ADMIT, call.keys, call.args, late), ask);
    if (!reply.ok) return reply;
    const { leased, ...granted } = reply;
    if (!leased && q.tokensPerWindow === undefined && q.requestsPerWindow === undefined) {
      return { ok: true, lease: NO_LEASE };
    }
    const token = {};
    if (leased) {
      this.#renewals.hold(token, () =>
        this.#eval(RENEW_LEASE, [keys.leases], [ask.requestId, this.#o.leaseTtlMs]),
      );
    }
    let released = false;
    const release = async (usedTokens?: number) => {
      if (released) return;
      released = true;
      await this.#giveBack(ask, leased && this.#renewals.letGo(token), usedTokens);
    };
    return { ...granted, lease: { release } };
  }

  /**
   * What a grant took, settled: its slot (when `leased`), its tokens to `usedTokens` (unknown:
   * the estimate stands), and its request when it never ran (`usedTokens` 0).
   */
  async #giveBack(ask: TenantAsk, leased: boolean, usedTokens?: number): Promise<void> {
    const q = ask.quotas;
    const keys = tenantKeys(ask.tenant);
    try {
      if (leased) await this.#send(['ZREM', keys.leases, ask.requestId]);
      const limit = q.tokensPerWindow;
      if (limit !== undefined && usedTokens !== undefined && usedTokens !== ask.tokens) {
        const delta = usedTokens - ask.tokens;
        await this.#eval(SETTLE_BUCKET, [keys.tokens], [delta, limit, q.windowMs]);
      }
      const rpw = q.requestsPerWindow;
      if (rpw !== undefined && usedTokens === 0) {
        await this.#eval(SETTLE_BUCKET, [keys.requests], [-1, rpw, q.windowMs]);
      }
    } catch {
      // Unreachable: the lease expires on its own within its TTL; the estimate stands.
    }
  }

  async claim(tenant: string, key: string, fingerprint: string): Promise<Claim> {
    const redisKey = idemKey(tenant, key);
    const holder = this.#o.newId();
    const settle = (action: string, ttlMs: Ms, payload = '') =>
      this.#eval(SETTLE_CLAIM, [redisKey], [holder, action, fingerprint, ttlMs, payload]);
    // A claim Redis made after the door gave up on it: nobody holds it, so it is let go, or
    // the key would say `in flight` to every retry until it expired.
    const late = (answer: unknown) =>
      (answer as string[] | null)?.[0] === 'claimed' ? settle('abandon', 0) : undefined;
    const args = [holder, this.#o.leaseTtlMs, fingerprint];
    const reply = (await this.#eval(CLAIM, [redisKey], args, late)) as string[];
    if (reply[0] === 'done')
      return { kind: 'done', response: JSON.parse(reply[1]) as StoredResponse };
    if (reply[0] === 'in_flight' || reply[0] === 'mismatch') return { kind: reply[0] };
    const token = {};
    this.#renewals.hold(token, () => settle('renew', this.#o.leaseTtlMs));
    const end = async (response: StoredResponse | null) => {
      if (!this.#renewals.letGo(token)) return;
      const payload = response === null ? '' : JSON.stringify(replayed(response));
      const done =
        response === null ? settle('abandon', 0) : settle('complete', this.#o.replayTtlMs, payload);
      await done.catch(() => {});
    };
    return {
      kind: 'claimed',
      hold: { complete: (response) => end(response), abandon: () => end(null) },
    };
  }

  async saveResponse(tenant: string, id: string, text: string): Promise<boolean> {
    if (Buffer.byteLength(text) > RESPONSE_MAX_BYTES) return false;
    const ttl = String(Math.ceil(this.#o.responseTtlMs));
    await this.#send(['SET', responseKey(tenant, id), text, 'PX', ttl]);
    return true;
  }

  async loadResponse(tenant: string, id: string): Promise<string | undefined> {
    const text = await this.#send(['GET', responseKey(tenant, id)]);
    return typeof text === 'string' ? text : undefined;
  }

  /** A character is at most 3 bytes of UTF-8 (one of a pair 2): so many bytes hold them. */
  async loadResponsePrefix(tenant: string, id: string, chars: number): Promise<string | undefined> {
    const last = String(3 * chars - 1);
    const text = await this.#send(['GETRANGE', responseKey(tenant, id), '0', last]);
    // A text kept is never empty: none is no key.
    return typeof text === 'string' && text !== '' ? text : undefined;
  }

  async deleteResponse(tenant: string, id: string): Promise<boolean> {
    const keys = [responseKey(tenant, id), eventsKey(tenant, id)];
    return Number(await this.#send(['DEL', ...keys])) >= 1;
  }

  async appendEvents(tenant: string, id: string, events: readonly string[]): Promise<void> {
    if (events.length === 0) return;
    const ttl = Math.ceil(this.#o.responseTtlMs);
    // One script: the log grows, keeps its TTL from now, and its watchers are told the events.
    await this.#eval(APPEND_EVENTS, [eventsKey(tenant, id)], [ttl, ...events]);
  }

  async readEvents(
    tenant: string,
    id: string,
    from: number,
    max: number,
  ): Promise<readonly string[]> {
    // From the end, the range ends at the last event at the latest.
    const to = from < 0 ? Math.min(from + max - 1, -1) : from + max - 1;
    const range = [String(from), String(to)];
    const events = await this.#send(['LRANGE', eventsKey(tenant, id), ...range]);
    return Array.isArray(events) ? events.map(String) : [];
  }

  watchEvents(tenant: string, id: string, told: Told): Promise<() => void> {
    return this.#watch.watch(eventsKey(tenant, id), toldEvents(told));
  }

  async beat(replica: string, ttlMs: number, serving: boolean): Promise<void> {
    // Sent together, answered in one round trip.
    await Promise.all([
      this.#send(['SET', replicaKey(replica), '1', 'PX', String(ttlMs)]),
      this.#eval(SERVING_BEAT, [SERVING_KEY], [replica, serving ? ttlMs : 0]),
    ]);
  }

  async alive(replica: string): Promise<boolean> {
    return Number(await this.#send(['EXISTS', replicaKey(replica)])) === 1;
  }

  async serving(): Promise<readonly string[]> {
    const replicas = await this.#eval(SERVING, [SERVING_KEY], []);
    return Array.isArray(replicas) ? replicas.map(String) : [];
  }

  async postWindow(replica: string, text: string, ttlMs: number): Promise<void> {
    await this.#eval(POST_WINDOW, [WINDOWS_KEY, WINDOWS_UNTIL_KEY], [replica, ttlMs, text]);
  }

  async windows(): Promise<ReadonlyMap<string, string>> {
    const flat = await this.#eval(WINDOWS, [WINDOWS_KEY, WINDOWS_UNTIL_KEY], []);
    const out = new Map<string, string>();
    if (!Array.isArray(flat)) return out;
    for (let i = 0; i + 1 < flat.length; i += 2) out.set(String(flat[i]), String(flat[i + 1]));
    return out;
  }

  async handOver(order: string): Promise<void> {
    const ttl = String(Math.ceil(this.#o.responseTtlMs));
    await Promise.all([
      this.#send(['RPUSH', ORDERS_KEY, order]),
      this.#send(['PEXPIRE', ORDERS_KEY, ttl]),
    ]);
  }

  async keepOrder(tenant: string, id: string, order: string): Promise<void> {
    const ttl = String(Math.ceil(this.#o.responseTtlMs));
    await this.#send(['SET', orderKey(tenant, id), order, 'PX', ttl]);
  }

  async takeOrder(tenant: string, id: string): Promise<string | undefined> {
    const order = await this.#send(['GETDEL', orderKey(tenant, id)]);
    return order === null || order === undefined ? undefined : String(order);
  }

  async dropOrder(tenant: string, id: string): Promise<void> {
    await this.#send(['DEL', orderKey(tenant, id)]);
  }

  async settling(tenant: string, id: string, ttlMs: number): Promise<boolean> {
    const set = ['SET', settlingKey(tenant, id), '1', 'NX', 'PX', String(Math.ceil(ttlMs))];
    return (await this.#send(set)) !== null;
  }

  async takeHandedOver(max: number): Promise<readonly string[]> {
    const orders = await this.#send(['LPOP', ORDERS_KEY, String(max)]);
    return Array.isArray(orders) ? orders.map(String) : [];
  }

  keepTurn(tenant: string, key: string, inMs: Ms, graceMs: Ms): Promise<void> {
    return this.#turns.keep(tenant, key, inMs, graceMs);
  }

  takeTurn(tenant: string, key: string, earlyMs: Ms, by: string) {
    return this.#turns.take(tenant, key, earlyMs, by);
  }

  endTurn(tenant: string, key: string, outcome: TurnEnd['outcome'], by: string) {
    return this.#turns.end(tenant, key, outcome, by);
  }

  watchTurns(told: (end: TurnEnd) => void): Promise<() => void> {
    return this.#turns.watch(told);
  }

  /** While (re)connecting, waits for the connection up to the connect timeout, then PINGs. */
  async ping(): Promise<void> {
    if (!this.#client.isReady) await this.#whenReady(this.#o.connectTimeoutMs);
    if (!this.#client.isReady) {
      throw new Error(`not connected (${this.#lastError?.message ?? 'connecting'})`);
    }
    // A write, not a PING: a Redis that answers but refuses writes (out of memory under
    // noeviction, a read-only replica) serves no quota, and read up, it would flap.
    await this.#send(['SET', PING_KEY, '1', 'PX', '10000']);
  }

  /**
   * Stops renewing; what late answers set off (a grant given back) is given `LATE_GRACE_MS`
   * to finish — a Redis stalled longer keeps it until its TTL — then the connection is cut.
   */
  async close(): Promise<void> {
    this.#renewals.close();
    this.#watch.close();
    await this.#late.settled(LATE_GRACE_MS, this.#o.clock, this.#o.timers);
    if (this.#client.isOpen) this.#client.destroy();
  }

  /**
   * One command, answered within the command timeout, or refused (`answeredWithin`). A command
   * answered late has done its work there: a lease it took expires within its TTL, and what
   * else it took `late` may give back.
   */
  #send(args: string[], late?: (answer: unknown) => unknown): Promise<unknown> {
    const { clock, timers, commandTimeoutMs } = this.#o;
    const answer = this.#client.sendCommand(args);
    const refused =
      late === undefined
        ? undefined
        : (coming: Promise<unknown>) => this.#late.follow(coming, late);
    return answeredWithin<unknown>(answer, commandTimeoutMs, clock, timers, refused);
  }

  /** EVALSHA, falling back to EVAL when the server has not seen the script (NOSCRIPT). */
  async #eval(
    s: LuaScript,
    keys: string[],
    args: ReadonlyArray<string | number>,
    late?: (answer: unknown) => unknown,
  ): Promise<unknown> {
    const tail = [String(keys.length), ...keys, ...args.map(String)];
    try {
      return await this.#send(['EVALSHA', s.sha, ...tail], late);
    } catch (e) {
      if (!(e instanceof Error && e.message.startsWith('NOSCRIPT'))) throw e;
      return await this.#send(['EVAL', s.source, ...tail], late);
    }
  }

  #whenReady(ms: Ms): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        timer.cancel();
        this.#client.off('ready', done);
        resolve();
      };
      const timer = this.#o.timers.at(this.#o.clock.now() + ms, done);
      this.#client.once('ready', done);
    });
  }
}
