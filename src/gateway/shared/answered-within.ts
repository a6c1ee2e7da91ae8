import type { Clock } from '../../core/ports/clock.ts';
import type { Timers } from '../../core/ports/timers.ts';
import type { Ms } from '../../core/request/units.ts';

/**
 * `answer`, or a refusal once `ms` have passed without it: a Redis that hangs (stopped, paused,
 * a network that drops packets) must be found down as one that resets is. The client's own
 * timeout covers only the wait to be written; once a command is on the socket, it would wait
 * for the server however long. An answer that comes after the refusal is handed to `late`:
 * the command did its work there, and the caller may have to undo it.
 */
export function answeredWithin<T>(
  answer: Promise<T>,
  ms: Ms,
  clock: Clock,
  timers: Timers,
  late?: (answer: T) => void,
) {
  return new Promise<T>((resolve, reject) => {
    const timeout = timers.at(clock.now() + ms, () => {
      reject(new Error(`no answer from Redis within ${ms} ms`));
      if (late) answer.then(late, () => {});
    });
    answer.then(
      (v) => {
        timeout.cancel();
        resolve(v);
      },
      (e: unknown) => {
        timeout.cancel();
        reject(e as Error);
      },
    );
  });
}
