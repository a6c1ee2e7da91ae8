/** The wall clock: milliseconds since this process started (monotonic). Only runtimes and the CLI use it. */
import type { Clock } from '../core/ports/clock.ts';

export const wallClock: Clock = { now: () => performance.now() };

/** Unix epoch milliseconds now: for absolute deadlines that cross process boundaries. */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}
