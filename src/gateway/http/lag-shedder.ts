/**
 * The gateway's guard of its own CPU (Envoy's overload manager is the model). How late a short
 * tick fires — the event loop's lag — says how far behind the process is: a saturated gateway
 * queues every request, admitted or not, behind the ones it is busy refusing. While the lag
 * (smoothed) is above the threshold, new completion requests are refused on arrival, 503
 * `gateway_overloaded` with Retry-After, before their body is read: such a refusal costs about
 * what a bare server's answer costs, where the policy's own (read, validate, estimate, decide)
 * costs several times more and would deepen the backlog that made the process late. Streams
 * already running are untouched. The lag falls as the shedding takes effect, and the gateway
 * decides again: it admits as much as its CPU keeps up with.
 */
import type { Clock } from '../../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../../core/ports/timers.ts';
import type { Ms } from '../../core/request/units.ts';

/** How often the tick is set: short enough to see a backlog within a few of them. */
const TICK_MS = 10;
/** Weight of the newest lag sample: about four ticks of memory. */
const SMOOTHING = 0.25;

export class LagShedder {
  readonly thresholdMs: Ms;
  #lagMs = 0;
  #timer: TimerHandle | null = null;
  /** When the tick is due: once it is overdue, the loop is late by at least that much. */
  #dueMs = 0;
  readonly #clock: Clock;
  readonly #timers: Timers;

  /** `thresholdMs` 0: never sheds (and sets no tick). */
  constructor(clock: Clock, timers: Timers, thresholdMs: Ms) {
    this.#clock = clock;
    this.#timers = timers;
    this.thresholdMs = thresholdMs;
    if (thresholdMs > 0) this.#tick(clock.now() + TICK_MS);
  }

  /** The event loop's smoothed lag, ms. */
  get lagMs(): Ms {
    return this.#lagMs;
  }

  /**
   * True while the smoothed lag is over the threshold — or the tick is already so overdue that
   * it will be when the tick fires (late by more than `(threshold − 0.75 lag) / 0.25`). Under a
   * flood of ready sockets Node's poll phase can run for seconds before any timer fires (libuv
   * polls again at once while its event array comes back full), and a lag measured only when
   * the tick fires would be seen only once the flood is over. Asking costs one clock read.
   */
  get shedding(): boolean {
    if (this.thresholdMs <= 0) return false;
    if (this.#lagMs > this.thresholdMs) return true;
    const overdue = this.#clock.now() - this.#dueMs;
    return overdue > (this.thresholdMs - (1 - SMOOTHING) * this.#lagMs) / SMOOTHING;
  }

  stop(): void {
    this.#timer?.cancel();
    this.#timer = null;
    this.#dueMs = Infinity;
  }

  #tick(atMs: Ms): void {
    this.#dueMs = atMs;
    this.#timer = this.#timers.at(atMs, () => {
      const now = this.#clock.now();
      this.#lagMs += SMOOTHING * (Math.max(0, now - atMs) - this.#lagMs);
      this.#tick(now + TICK_MS);
    });
  }
}
