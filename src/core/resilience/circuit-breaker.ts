/**
 * A consecutive-failure circuit breaker (after cockatiel's): closed while calls succeed; open
 * after `threshold` failures in a row, refusing calls for `openMs`; then half-open, letting one
 * call probe — success closes it, failure opens it again. State is plain data; time comes from
 * the injected clock.
 */
import type { Clock } from '../ports/clock.ts';
import type { Ms } from '../request/units.ts';

export type BreakerState = 'closed' | 'open' | 'half-open';

export class CircuitBreaker {
  private failures = 0;
  private openedAtMs: Ms | null = null;
  private probing = false;
  private readonly clock: Clock;
  private readonly threshold: number;
  private readonly openMs: Ms;

  constructor(clock: Clock, threshold = 5, openMs: Ms = 5_000) {
    this.clock = clock;
    this.threshold = threshold;
    this.openMs = openMs;
  }

  get state(): BreakerState {
    if (this.openedAtMs === null) return 'closed';
    return this.clock.now() - this.openedAtMs >= this.openMs ? 'half-open' : 'open';
  }

  /** Whether a call may go now (a half-open breaker lets exactly one probe through). */
  allows(): boolean {
    const s = this.state;
    if (s === 'closed') return true;
    if (s === 'open' || this.probing) return false;
    this.probing = true;
    return true;
  }

  record(success: boolean): void {
    this.probing = false;
    if (success) {
      this.failures = 0;
      this.openedAtMs = null;
      return;
    }
    this.failures++;
    if (this.openedAtMs !== null || this.failures >= this.threshold)
      this.openedAtMs = this.clock.now();
  }
}
