import type { Clock } from '../../core/ports/clock.ts';
import type { Timers } from '../../core/ports/timers.ts';
import type { Ms } from '../../core/request/units.ts';

/**
 * `answer`, or a refusal once `ms` have passed without it: a Redis that hangs (stopped, paused,
 * a network that drops packets) must be found down as one that resets is. The client's own
 * timeout covers only the wait to be written; once a command is on the socket, it would wait
 * for the server however long.
 */
export function answeredWithin<T>(answer: Promise<T>, ms: Ms, clock: Clock, timers: Timers) {
  return new Promise<T>((resolve, reject) => {
    const late = timers.at(clock.now() + ms, () =>
      reject(new Error(`no answer from Redis within ${ms} ms`)),
    );
    answer.then(
      (v) => {
        late.cancel();
        resolve(v);
      },
      (e: unknown) => {
        late.cancel();
        reject(e as Error);
      },
    );
  });
}
