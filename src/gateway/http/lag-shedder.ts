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
 *
 * While streams run, the gateway's lateness is also added to every token gap their clients see:
 * a relay that runs late bunches a step's tokens behind the turn that held them. A stream's p99
 * gap forgives a few late turns, not a loop that stays late, so the guard weighs the lag over
 * about a second (`GUARD_MEMORY_MS`, time-weighted): past `ratio` of the tightest gap objective
 * among the running streams (`tightestGapMs`, read at each tick), new requests are turned away
 * before the admitted streams miss theirs. A burst of arrivals that holds the loop for a moment
 * is the fast threshold's to judge.
 *
 * The tick has a cost of its own: a timer waking an idle process a hundred times a second took
 * ~17 ms of CPU a second on a 2-core VM, most of what an idle gateway spent. So it is set every
 * 50 ms while the loop keeps time and every 10 ms once it runs late, and with no request
 * asked about for a second (`REST_AFTER_MS`) and no stream to guard, the tick rests, and the lag
 * reads 0 (an idle loop is not late); the next request to ask wakes it. A flood arriving at a
 * rested shedder is judged as one arriving at an idle one: the tick is set at the first request,
 * and a poll phase that holds it past its due time sheds as before.
 */
import type { Clock } from '../../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../../core/ports/timers.ts';
import type { Ms } from '../../core/request/units.ts';

/** How often the tick is set while the loop runs late: short enough to see a backlog within a few of them. */
const TICK_MS = 10;
/**
 * How often while it keeps time: smoothed and sustained lag under `CALM_LAG_MS`, well below any
 * line it sheds at (12 ms for an 80 ms gap objective). Each tick wakes the process; at 100 a
 * second that cost a gateway relaying 100 streams ~5% of its CPU on a 2-core VM. A flood arriving
 * meanwhile is seen by the overdue rule, which does not depend on the period, and a late tick
 * sets the short period again.
 */
const CALM_TICK_MS = 50;
const CALM_LAG_MS = 5;
/** Weight of the newest lag sample: about four ticks of memory. */
const SMOOTHING = 0.25;
/** The gap guard's memory of the lag: a sample weighs 1 − e^(−elapsed / this). */
const GUARD_MEMORY_MS = 1_000;
/** With no request asking and no stream to guard for this long, the tick rests. */
const REST_AFTER_MS = 1_000;

/** The guard on running streams' gaps: the share of their tightest objective, and where to read it. */
export interface GapGuard {
  readonly ratio: number;
  /** The tightest token-gap objective among the streams running now; Infinity with none. */
  readonly tightestGapMs: () => Ms;
}

export class LagShedder {
  readonly thresholdMs: Ms;
  readonly #guard: GapGuard | undefined;
  /** The guard's limit on the sustained lag now: Infinity while no stream has a gap objective. */
  #guardMs: Ms = Infinity;
  #sustainedLagMs = 0;
  #lagMs = 0;
  #timer: TimerHandle | null = null;
  /** When the tick is due: once it is overdue, the loop is late by at least that much. */
  #dueMs = 0;
  /** A request asked since the last tick. */
  #asked = false;
  /** When a tick last saw a request asking, or a stream to guard. */
  #busyMs: Ms;
  /** The tick rests until the next request asks (not stopped: `stop` ends it for good). */
  #resting = false;
  readonly #clock: Clock;
  readonly #timers: Timers;

  /** `thresholdMs` 0: never sheds (and sets no tick). */
  constructor(clock: Clock, timers: Timers, thresholdMs: Ms, guard?: GapGuard) {
    this.#clock = clock;
    this.#timers = timers;
    this.thresholdMs = thresholdMs;
    this.#guard = guard !== undefined && guard.ratio > 0 ? guard : undefined;
    this.#busyMs = clock.now();
    if (thresholdMs > 0) this.#tick(this.#busyMs + TICK_MS);
  }

  /** The gap guard's limit on the sustained lag now (Infinity: no stream to guard). */
  get guardMs(): Ms {
    return this.#guardMs;
  }

  /** The lag weighed over about a second, as the gap guard judges it. */
  get sustainedLagMs(): Ms {
    return this.#sustainedLagMs;
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
    this.#asked = true;
    if (this.#resting) {
      this.#resting = false;
      this.#tick(this.#clock.now() + TICK_MS);
      return false;
    }
    if (this.#lagMs > this.thresholdMs || this.#sustainedLagMs > this.#guardMs) return true;
    const overdue = this.#clock.now() - this.#dueMs;
    return overdue > (this.thresholdMs - (1 - SMOOTHING) * this.#lagMs) / SMOOTHING;
  }

  stop(): void {
    this.#timer?.cancel();
    this.#timer = null;
    this.#dueMs = Infinity;
    this.#resting = false;
  }

  #tick(atMs: Ms): void {
    this.#dueMs = atMs;
    const setAt = this.#clock.now();
    this.#timer = this.#timers.at(atMs, () => {
      const now = this.#clock.now();
      const lag = Math.max(0, now - atMs);
      this.#lagMs += SMOOTHING * (lag - this.#lagMs);
      const guard = this.#guard;
      if (guard !== undefined) {
        const weight = 1 - Math.exp(-(now - setAt) / GUARD_MEMORY_MS);
        this.#sustainedLagMs += weight * (lag - this.#sustainedLagMs);
        this.#guardMs = guard.ratio * guard.tightestGapMs();
      }
      if (this.#asked || Number.isFinite(this.#guardMs)) this.#busyMs = now;
      this.#asked = false;
      const calm = this.#lagMs < CALM_LAG_MS && this.#sustainedLagMs < CALM_LAG_MS;
      if (now - this.#busyMs < REST_AFTER_MS)
        return this.#tick(now + (calm ? CALM_TICK_MS : TICK_MS));
      this.#rest();
    });
  }

  #rest(): void {
    this.#timer = null;
    this.#dueMs = Infinity;
    this.#lagMs = 0;
    this.#sustainedLagMs = 0;
    this.#resting = true;
  }
}
