/**
 * A virtual clock that is also a scheduler: `Clock` and `Timers` over an EventQueue. Time only
 * moves when `run` pops the next event, so hours pass in milliseconds. The simulator runs on it,
 * and so does any test of code that takes a Clock and Timers. A cancelled timer moves no time:
 * a request's deadline an hour away, cancelled when it completes, does not stretch the run.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import type { Ms } from '../core/request/units.ts';
import { EventQueue, type SimEvent } from './event-queue.ts';

export class VirtualClock implements Clock, Timers {
  private readonly queue = new EventQueue();
  private current: Ms = 0;
  private fired = 0;

  now(): Ms {
    return this.current;
  }

  /** Events fired so far. */
  get events(): number {
    return this.fired;
  }

  get pending(): number {
    return this.queue.size;
  }

  at(atMs: Ms, fn: () => void): TimerHandle {
    return this.queue.push(atMs < this.current ? this.current : atMs, fn);
  }

  /** Fires events in (time, sequence) order until none remain or the next is after `untilMs`. */
  run(untilMs: Ms = Infinity, onEvent?: (now: Ms) => void): void {
    for (;;) {
      const head = this.queue.peek();
      if (head === undefined) return;
      if (head.at > untilMs) {
        this.current = untilMs;
        return;
      }
      const next = this.queue.pop() as SimEvent;
      const fn = next.fn;
      if (fn === null) continue;
      this.current = next.at;
      this.fired++;
      fn();
      if (onEvent !== undefined) onEvent(this.current);
    }
  }
}
