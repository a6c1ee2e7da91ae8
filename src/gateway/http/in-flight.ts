/**
 * The requests an HTTP gateway is answering, for its drain (Kubernetes' preStop and
 * terminationGracePeriod are the model): once draining, new requests are refused, and the
 * gateway waits until every request in flight has ended — its answer written, its shared-state
 * lease given back — or its drain time runs out, when the rest are stopped as `shutting_down`
 * and end the same way, only sooner. A request enters when its handler starts and leaves when
 * nothing of it remains: after its pass is ended, the stream's body included.
 */
import type { Ms } from '../../core/request/units.ts';
import type { Timers } from '../../core/ports/timers.ts';
import type { Clock } from '../../core/ports/clock.ts';

export interface Live {
  /**
   * What to do if the drain runs out of time while the request is still in flight (at once, if
   * it already has); a later call replaces an earlier one, `undefined` forgets it.
   */
  onCut(stop: (() => void) | undefined): void;
  /** Idempotent: the request is over. */
  leave(): void;
}

/** One request in flight: plain fields, no AbortController unless the drain needs one. */
class LiveRequest implements Live {
  cut = false;
  private stop: (() => void) | undefined;
  private readonly owner: InFlight;

  constructor(owner: InFlight) {
    this.owner = owner;
  }

  onCut(stop: (() => void) | undefined): void {
    this.stop = stop;
    if (this.cut) stop?.();
  }

  leave(): void {
    this.owner.left(this);
  }

  /** The drain ran out of time. */
  cutNow(): void {
    this.cut = true;
    this.stop?.();
  }
}

export class InFlight {
  #draining = false;
  #cut = 0;
  readonly #live = new Set<LiveRequest>();
  #idle: (() => void)[] = [];

  get draining(): boolean {
    return this.#draining;
  }

  get size(): number {
    return this.#live.size;
  }

  /** Requests stopped by `cut` so far, whoever called it. */
  get cutCount(): number {
    return this.#cut;
  }

  enter(): Live {
    const live = new LiveRequest(this);
    this.#live.add(live);
    return live;
  }

  /** `live` is over (its own `leave`). */
  left(live: LiveRequest): void {
    if (this.#live.delete(live) && this.#live.size === 0) this.#wake();
  }

  /** From now on new requests are refused; resolves once none is in flight. */
  drain(): Promise<void> {
    this.#draining = true;
    if (this.#live.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Stops every request still in flight; they end (and leave) as their handlers unwind. */
  cut(): number {
    let n = 0;
    for (const live of this.#live) {
      if (live.cut) continue;
      live.cutNow();
      n++;
    }
    this.#cut += n;
    return n;
  }

  /** `drain()`, but no longer than `timeoutMs`: true when every request ended on its own. */
  async drainWithin(timeoutMs: Ms, clock: Clock, timers: Timers): Promise<boolean> {
    let timer: { cancel(): void } | undefined;
    const timedOut = new Promise<false>((resolve) => {
      timer = timers.at(clock.now() + timeoutMs, () => resolve(false));
    });
    const ended = await Promise.race([this.drain().then(() => true as const), timedOut]);
    timer?.cancel();
    return ended;
  }

  #wake(): void {
    const waiting = this.#idle;
    this.#idle = [];
    for (const resolve of waiting) resolve();
  }
}
