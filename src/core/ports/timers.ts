/** Scheduling, for engines and runtimes only: policies return decisions and never wait. */
import type { Ms } from '../request/units.ts';

export interface TimerHandle {
  cancel(): void;
}

export interface Timers {
  /** Runs `fn` once the clock reaches `atMs` (at once, in order, if it already has). */
  at(atMs: Ms, fn: () => void): TimerHandle;
}
