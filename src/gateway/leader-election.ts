/**
 * One leader among the gateways that share a Kubernetes pool, elected on a Lease as client-go's
 * `leaderelection` elects kube-controller-manager's, with its defaults: every `retryMs` (2 s)
 * each gateway reads the Lease; the holder writes it again (a renewal), and the others take it
 * only once it has gone `durationMs` (15 s) unchanged on their own clock — never comparing
 * clocks across machines — or been released. A leader that has not renewed for
 * `renewDeadlineMs` (10 s) stops leading before anyone else may start, so two never act at
 * once. Every write carries the version it was read at: of two gateways taking one expired
 * Lease, the API server keeps the first. The leader's word on the pool (the replicas it set,
 * those draining) is written with each renewal and at once when it changes (`poke`); the others
 * are told it at each read. An operator's freeze asked of any gateway is written on the Lease
 * too (`freeze`), so it holds the leader, whoever that is now or later. Closing releases the
 * Lease, so another leads within a round.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import type { Ms } from '../core/request/units.ts';
import {
  LeaseConflict,
  microTime,
  type LeaseRecord,
  type LeaseStore,
  type PoolWord,
} from './kube-lease.ts';
import { KubeError } from './kube-client.ts';
import type { OpsLog } from './ops-log.ts';

/** client-go's defaults (`LeaseDuration`, `RenewDeadline`, `RetryPeriod`). */
export const LEASE_DURATION_MS: Ms = 15_000;
export const RENEW_DEADLINE_MS: Ms = 10_000;
export const RETRY_MS: Ms = 2_000;

export interface ElectionOptions {
  readonly lease: LeaseStore;
  /** This gateway's name on the Lease: its pod's, with a suffix unique to the process. */
  readonly identity: string;
  readonly durationMs?: Ms;
  readonly renewDeadlineMs?: Ms;
  readonly retryMs?: Ms;
  readonly clock: Clock;
  readonly timers: Timers;
  /** Unix epoch milliseconds now, for the times written on the Lease. */
  readonly epochMs: () => number;
  readonly log: OpsLog;
  /** The leader's word on the pool, written on the Lease. */
  word(): PoolWord;
  /** This gateway now leads (told the word of the one before), or no longer does. */
  onLead(leading: boolean, word: PoolWord | undefined): void;
  /** The word read while another leads. */
  onWord(word: PoolWord | undefined): void;
}

export class LeaderElection {
  readonly #o: ElectionOptions;
  readonly #durationMs: Ms;
  #leading = false;
  /** The Lease as last read or written, and when (this clock) it was first seen so. */
  #seen: LeaseRecord | undefined;
  #seenAtMs: Ms = 0;
  #renewedAtMs: Ms = 0;
  /** Why the last round failed, said once until one succeeds. */
  #failing: string | undefined;
  /** An operator's freeze or thaw asked here, until the Lease holds it. */
  #wantFrozen: boolean | undefined;
  #timer: TimerHandle | null = null;
  /** Until when the API server asked not to be called (its Retry-After). */
  #quietUntilMs: Ms = 0;
  #round: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(o: ElectionOptions) {
    this.#o = o;
    this.#durationMs = o.durationMs ?? LEASE_DURATION_MS;
  }

  get leading(): boolean {
    return this.#leading;
  }

  /**
   * Whether it may act now: it leads, and renewed within the renew deadline by its own clock. A
   * process paused past that (SIGSTOP, a long collection) believes it leads until its next round
   * says otherwise, and by then another may hold the Lease.
   */
  get current(): boolean {
    const deadline = this.#o.renewDeadlineMs ?? RENEW_DEADLINE_MS;
    return this.#leading && this.#o.clock.now() - this.#renewedAtMs < deadline;
  }

  /**
   * The operator's freeze, as the Lease holds it (or as asked here, until it does); undefined
   * before the Lease was read.
   */
  get frozen(): boolean | undefined {
    return this.#wantFrozen ?? (this.#seen === undefined ? undefined : this.#seen.frozen === true);
  }

  /** Freezes or thaws the autoscaler of whichever gateway leads: written on the Lease at once. */
  freeze(frozen: boolean): void {
    this.#wantFrozen = frozen;
    this.poke();
  }

  /** The first round now, then one every `retryMs`. */
  start(): void {
    this.poke();
  }

  /** A round as soon as the one under way (if any) ends: the leader's word changed. */
  poke(): void {
    if (this.#closed) return;
    this.#timer?.cancel();
    this.#timer = null;
    if (this.#o.clock.now() < this.#quietUntilMs) {
      this.#timer = this.#o.timers.at(this.#quietUntilMs, () => this.poke());
      return;
    }
    this.#round = this.#round.then(() => this.#step());
  }

  /** Stops the rounds; a leader releases the Lease (holder '', as client-go's ReleaseOnCancel). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#timer?.cancel();
    await this.#round;
    if (!this.#leading) return;
    this.#leading = false;
    // The Lease as last seen, else (someone wrote since: a follower's freeze) as read again.
    let lease = this.#seen;
    for (let tries = 0; tries < 2 && lease?.holder === this.#o.identity; tries++) {
      const now = microTime(this.#o.epochMs());
      const released = { ...lease, holder: '', durationMs: 1_000, renewTime: now };
      try {
        await this.#o.lease.update({ ...released, pool: this.#o.word() });
        return;
      } catch (e) {
        if (!(e instanceof LeaseConflict)) return;
        lease = await this.#o.lease.get().catch(() => undefined);
      }
    }
  }

  async #step(): Promise<void> {
    if (this.#closed) return;
    let backOffMs = 0;
    try {
      await this.#tryLead();
      if (this.#failing !== undefined) this.#o.log.info({}, 'leader election: the Lease answers');
      this.#failing = undefined;
    } catch (e) {
      // Another gateway wrote first: the next read says who leads.
      if (e instanceof LeaseConflict) this.#lapsed();
      else this.#failed(e as Error);
      // An API server that said when to come back (a 429 of its priority and fairness) is not
      // asked before.
      if (e instanceof KubeError) backOffMs = e.retryAfterMs ?? 0;
    }
    if (this.#closed) return;
    this.#timer?.cancel();
    this.#quietUntilMs = this.#o.clock.now() + backOffMs;
    const next = this.#o.clock.now() + Math.max(this.#o.retryMs ?? RETRY_MS, backOffMs);
    this.#timer = this.#o.timers.at(next, () => this.poke());
  }

  async #tryLead(): Promise<void> {
    const o = this.#o;
    const stamp = microTime(o.epochMs());
    const found = await o.lease.get();
    const now = o.clock.now();
    if (found === undefined) {
      const made = { holder: o.identity, durationMs: this.#durationMs, transitions: 0 };
      const word = this.#leading ? o.word() : undefined;
      const lease = { ...made, acquireTime: stamp, renewTime: stamp, pool: word };
      const frozen = this.#wantFrozen;
      this.#lead(await o.lease.create({ ...lease, frozen }), now);
      if (this.#wantFrozen === frozen) this.#wantFrozen = undefined;
      return;
    }
    if (this.#seen?.version !== found.version) {
      this.#seen = found;
      this.#seenAtMs = now;
    }
    const held = found.holder !== '' && found.holder !== o.identity;
    if (held && now - this.#seenAtMs < found.durationMs) {
      this.#follow(found);
      const want = this.#wantFrozen;
      if (want !== undefined && found.frozen !== want) {
        // Written over the holder's record, which stays as it was: the holder's clock (when it
        // was last seen to change) is not reset by this gateway's own write.
        this.#seen = await o.lease.update({ ...found, frozen: want });
      }
      if (this.#wantFrozen === want) this.#wantFrozen = undefined;
      return;
    }
    const taking = found.holder !== o.identity;
    const want = this.#wantFrozen;
    const renewed = await o.lease.update({
      ...found,
      holder: o.identity,
      durationMs: this.#durationMs,
      acquireTime: taking ? stamp : found.acquireTime,
      renewTime: stamp,
      transitions: found.transitions + (taking ? 1 : 0),
      pool: this.#leading ? o.word() : found.pool,
      frozen: want ?? found.frozen,
    });
    if (this.#wantFrozen === want) this.#wantFrozen = undefined;
    if (taking) {
      const was = found.holder === '' ? 'released' : `held by ${found.holder}, expired`;
      o.log.info({ identity: o.identity, was: found.holder }, `leader election: leading (${was})`);
    }
    this.#lead(renewed, now);
  }

  #lead(lease: LeaseRecord, now: Ms): void {
    this.#seen = lease;
    this.#seenAtMs = now;
    this.#renewedAtMs = now;
    if (this.#leading) return;
    this.#leading = true;
    this.#o.onLead(true, lease.pool);
  }

  #follow(lease: LeaseRecord): void {
    if (this.#leading) this.#stepDown(`${lease.holder} holds the Lease`);
    this.#o.onWord(lease.pool);
  }

  #failed(e: Error): void {
    const o = this.#o;
    if (this.#failing !== e.message) {
      o.log.warn({ err: e.message }, `leader election: the Lease: ${e.message}`);
    }
    this.#failing = e.message;
    this.#lapsed();
  }

  /** A leader that has not renewed for the renew deadline, for whatever cause, stops leading. */
  #lapsed(): void {
    const since = this.#o.clock.now() - this.#renewedAtMs;
    if (this.#leading && since >= (this.#o.renewDeadlineMs ?? RENEW_DEADLINE_MS)) {
      this.#stepDown(`not renewed for ${Math.round(since)} ms`);
    }
  }

  #stepDown(why: string): void {
    this.#leading = false;
    this.#o.log.warn({ identity: this.#o.identity }, `leader election: no longer leading (${why})`);
    this.#o.onLead(false, undefined);
  }
}
