/**
 * Timers on the wall clock, for engines and gateways that run in real time. `at` takes an
 * absolute time on `wallClock`'s scale; one already past fires on the next macrotask, never
 * synchronously, so a caller's state is settled before the callback runs (the same promise the
 * virtual clock keeps by ordering).
 */
import type { Clock } from '../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import { wallClock } from './wall-clock.ts';

export function wallTimers(clock: Clock = wallClock): Timers {
  return {
    at(atMs, fn): TimerHandle {
      const t = setTimeout(fn, Math.max(0, atMs - clock.now()));
      return { cancel: () => clearTimeout(t) };
    },
  };
}
