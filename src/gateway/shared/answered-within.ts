import type { Clock } from '../../core/ports/clock.ts';
import type { Timers } from '../../core/ports/timers.ts';
import type { Ms } from '../../core/request/units.ts';

/**
 * `answer`, or a refusal once `ms` have passed without it: a Redis that hangs (stopped, paused,
 * a network that drops packets) must be found down as one that resets is. The client's own
 * timeout covers only the wait to be written; once a command is on the socket, it would wait
 * for the server however long. A command refused so is handed to `late`, its answer still to
 * come: the command does its work there, and the caller may have to undo it.
 */
export function answeredWithin<T>(
  answer: Promise<T>,
  ms: Ms,
  clock: Clock,
  timers: Timers,
  late?: (answer: Promise<T>) => void,
) {
  return new Promise<T>((resolve, reject) => {
    const timeout = timers.at(clock.now() + ms, () => {
      reject(new Error(`no answer from Redis within ${ms} ms`));
      late?.(answer);
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

/**
 * What commands refused for their lateness set off when their answers come (a grant given
 * back, a claim let go), followed from the refusal to the end of that work, so a store closing
 * can give it a moment: a Redis that stalled and answers within that moment is left holding
 * nothing of this process's. Only late commands are followed: one answered in time costs nothing.
 */
export class LateAnswers {
  readonly #pending = new Set<Promise<unknown>>();

  /** `answer`, still to come, and then `work` on it, followed until both are done. */
  follow<T>(answer: Promise<T>, work: (answer: T) => unknown): void {
    const p = answer.then(work);
    this.#pending.add(p);
    const drop = () => void this.#pending.delete(p);
    p.then(drop, drop);
  }

  /** Resolves once everything followed has settled, or `withinMs` have passed. */
  async settled(withinMs: Ms, clock: Clock, timers: Timers): Promise<void> {
    const end = clock.now() + withinMs;
    while (this.#pending.size > 0 && clock.now() < end) {
      let timer: { cancel(): void } | undefined;
      const out = new Promise<void>((r) => (timer = timers.at(end, r)));
      await Promise.race([Promise.allSettled([...this.#pending]), out]);
      timer?.cancel();
    }
  }
}
