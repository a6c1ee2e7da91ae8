/**
 * The leases and claims one process holds in Redis (redis-store.ts), each renewed every third of
 * its TTL while held: a process that dies stops renewing, and what it held expires within one
 * TTL. One timer for them all, set while any is held.
 */
import type { Clock } from '../../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../../core/ports/timers.ts';
import type { Ms } from '../../core/request/units.ts';

export class Renewals {
  readonly #held = new Map<object, () => Promise<unknown>>();
  readonly #clock: Clock;
  readonly #timers: Timers;
  readonly #everyMs: Ms;
  #timer: TimerHandle | null = null;
  #closed = false;

  constructor(clock: Clock, timers: Timers, ttlMs: Ms) {
    this.#clock = clock;
    this.#timers = timers;
    this.#everyMs = ttlMs / 3;
  }

  /** Renews what `token` names with `renew` until it is let go; a renewal's failure is ignored. */
  hold(token: object, renew: () => Promise<unknown>): void {
    this.#held.set(token, renew);
    if (this.#timer === null && !this.#closed) this.#schedule();
  }

  /** Stops renewing `token`; false when it was not held (let go already, or closed). */
  letGo(token: object): boolean {
    return this.#held.delete(token);
  }

  /** Stops renewing anything. */
  close(): void {
    this.#closed = true;
    this.#timer?.cancel();
    this.#held.clear();
  }

  #schedule(): void {
    this.#timer = this.#timers.at(this.#clock.now() + this.#everyMs, () => {
      this.#timer = null;
      for (const renewal of this.#held.values()) renewal().catch(() => {});
      if (this.#held.size > 0 && !this.#closed) this.#schedule();
    });
  }
}
