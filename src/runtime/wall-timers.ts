/**
 * Timers on the wall clock, for engines and gateways that run in real time. `at` takes an
 * absolute time on `wallClock`'s scale; one already past fires on the next macrotask, never
 * synchronously, so a caller's state is settled before the callback runs (the same promise the
 * virtual clock keeps by ordering). A time further ahead than Node's timers reach (2^31 − 1 ms,
 * about 24.8 days) is waited for in steps, never fired at once as Node would.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import { wallClock } from './wall-clock.ts';

const LONGEST_TIMEOUT_MS = 2 ** 31 - 1;

export function wallTimers(clock: Clock = wallClock): Timers {
  return {
    at(atMs, fn): TimerHandle {
      let t: NodeJS.Timeout;
      const arm = () => {
        const wait = atMs - clock.now();
        t =
          wait > LONGEST_TIMEOUT_MS
            ? setTimeout(arm, LONGEST_TIMEOUT_MS)
            : setTimeout(fn, Math.max(0, wait));
      };
      arm();
      return { cancel: () => clearTimeout(t) };
    },
  };
}
