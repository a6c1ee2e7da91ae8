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

/**
 * Commands whose answers have work to set off when they come late (a grant given back, a claim
 * let go), and that work: followed to its end, so a store closing can give it a moment. A Redis
 * that stalled and answers within that moment is left holding nothing of this process's.
 */
export class LateAnswers {
  readonly #pending = new Set<Promise<unknown>>();

  /** `answer`, a command's, followed until it settles. */
  follow(answer: Promise<unknown>): void {
    this.#track(answer);
  }

  /** `late`, whose work (the promise it returns) is followed too. */
  undoing<T>(late: (answer: T) => unknown): (answer: T) => void {
    return (answer) => this.#track(Promise.resolve().then(() => late(answer)));
  }

  /** Resolves once every command and its late work has settled, or `withinMs` have passed. */
  async settled(withinMs: Ms, clock: Clock, timers: Timers): Promise<void> {
    const end = clock.now() + withinMs;
    while (this.#pending.size > 0 && clock.now() < end) {
      let timer: { cancel(): void } | undefined;
      const out = new Promise<void>((r) => (timer = timers.at(end, r)));
      await Promise.race([Promise.allSettled([...this.#pending]), out]);
      timer?.cancel();
    }
  }

  #track(p: Promise<unknown>): void {
    this.#pending.add(p);
    const drop = () => void this.#pending.delete(p);
    p.then(drop, drop);
  }
}
