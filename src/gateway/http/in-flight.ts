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
import { RequestStopped } from '../stop.ts';

export interface Live {
  /** Aborted with `RequestStopped('shutting_down')` when the drain runs out of time. */
  readonly signal: AbortSignal;
  /** Idempotent: the request is over. */
  leave(): void;
}

export class InFlight {
  #draining = false;
  #cut = 0;
  readonly #live = new Set<AbortController>();
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
    const stop = new AbortController();
    this.#live.add(stop);
    return {
      signal: stop.signal,
      leave: () => {
        if (this.#live.delete(stop) && this.#live.size === 0) this.#wake();
      },
    };
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
    for (const stop of this.#live) {
      if (stop.signal.aborted) continue;
      stop.abort(new RequestStopped('shutting_down'));
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
