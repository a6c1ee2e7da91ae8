/**
 * A consecutive-failure circuit breaker (after cockatiel's): closed while calls succeed; open
 * after `failures` failures in a row, refusing calls for `openMs`; then half-open, letting one
 * call probe at a time — success closes it, failure opens it again, a probe that ends without
 * a verdict (its client left) lets the next one go. Every change of state is told once through
 * `onChange`, so a host turns it into a metric and a log line; the open → half-open change is
 * seen when the state is next read, since nothing happens at that moment. Time comes from the
 * injected clock.
 */
import type { Clock } from '../ports/clock.ts';
import type { Ms } from '../request/units.ts';

export type BreakerState = 'closed' | 'open' | 'half-open';

export interface BreakerOptions {
  /** Consecutive failures that open it. */
  readonly failures: number;
  /** How long it stays open before it lets a probe through. */
  readonly openMs: Ms;
  readonly onChange?: (from: BreakerState, to: BreakerState) => void;
}

export const BREAKER_DEFAULTS: BreakerOptions = { failures: 5, openMs: 5_000 };

export class CircuitBreaker {
  private failures = 0;
  private openedAtMs: Ms | null = null;
  private probe = false;
  private told: BreakerState = 'closed';
  private readonly clock: Clock;
  private readonly o: BreakerOptions;

  constructor(clock: Clock, options: BreakerOptions = BREAKER_DEFAULTS) {
    this.clock = clock;
    this.o = options;
  }

  get state(): BreakerState {
    const s = this.current();
    this.tell(s);
    return s;
  }

  /** Whether a probe is out (half-open: nothing else may go until it returns). */
  get probing(): boolean {
    return this.probe;
  }

  /** Until an open breaker lets a probe through: 0 when a call may go now. */
  msUntilProbe(): Ms {
    if (this.openedAtMs === null) return 0;
    return Math.max(0, this.openedAtMs + this.o.openMs - this.clock.now());
  }

  /** Whether a call may go now (a half-open breaker lets exactly one probe through). */
  allows(): boolean {
    const s = this.state;
    if (s === 'closed') return true;
    if (s === 'open' || this.probe) return false;
    this.probe = true;
    return true;
  }

  record(success: boolean): void {
    this.probe = false;
    if (success) {
      this.failures = 0;
      this.openedAtMs = null;
    } else {
      this.failures++;
      if (this.openedAtMs !== null || this.failures >= this.o.failures) {
        this.openedAtMs = this.clock.now();
      }
    }
    this.tell(this.current());
  }

  /** A call ended without saying anything of the callee's health: the next probe may go. */
  abandon(): void {
    this.probe = false;
  }

  private current(): BreakerState {
    if (this.openedAtMs === null) return 'closed';
    return this.clock.now() - this.openedAtMs >= this.o.openMs ? 'half-open' : 'open';
  }

  private tell(s: BreakerState): void {
    if (s === this.told) return;
    const from = this.told;
    this.told = s;
    this.o.onChange?.(from, s);
  }
}
