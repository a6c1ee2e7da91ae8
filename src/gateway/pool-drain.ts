/**
 * A pool's drain of one slot, the same for every pool (local processes, Kubernetes replicas):
 * once the slot is out of routing, its streams are watched every 200 ms until two looks in a
 * row find none — so a request placed just before the drain began is seen — or until
 * `maxDrainMs` has passed, when those still running are cut. `done` is told how long it took and
 * how many were cut; `cancel` stops the watch (a drain taken back). Where other gateways send
 * the replica requests too (`othersToo`), theirs are not counted here: the replica itself must
 * also report none running or waiting, in figures scraped after the drain began — a replica
 * whose figures cannot be had is waited for until `maxDrainMs`.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import type { Ms } from '../core/request/units.ts';
import type { PoolFleet } from './scale-export.ts';

/** How often a drain looks whether its streams have ended. */
const DRAIN_POLL_MS = 200;

export interface DrainWatch {
  cancel(): void;
}

export function watchDrain(
  slot: number,
  at: {
    readonly fleet: PoolFleet | null;
    readonly clock: Clock;
    readonly timers: Timers;
    readonly maxDrainMs: Ms;
    readonly othersToo?: boolean;
  },
  done: (tookMs: Ms, cut: number) => void,
): DrainWatch {
  const startMs = at.clock.now();
  let idlePolls = 0;
  let timer: TimerHandle | null = null;
  const poll = () => {
    timer = null;
    const streams = at.fleet?.inFlightOn(slot) ?? 0;
    const reported = at.othersToo === true ? at.fleet?.reportedOn(slot) : undefined;
    const othersIdle =
      at.othersToo !== true ||
      (reported !== undefined && reported.atMs >= startMs && reported.busy === 0);
    idlePolls = streams === 0 && othersIdle ? idlePolls + 1 : 0;
    const tookMs = at.clock.now() - startMs;
    if (idlePolls >= 2 || tookMs >= at.maxDrainMs) done(tookMs, streams);
    else timer = at.timers.at(at.clock.now() + DRAIN_POLL_MS, poll);
  };
  timer = at.timers.at(at.clock.now() + DRAIN_POLL_MS, poll);
  return {
    cancel: () => {
      timer?.cancel();
      timer = null;
    },
  };
}
