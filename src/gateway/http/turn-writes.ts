/**
 * Writes held to the end of the event loop's turn, so first tokens go out before later ones.
 *
 * Under hundreds of streams a model step's tokens reach the gateway together: one read per
 * stream, each followed at once by its write to the client, a syscall of its own. A new stream's
 * first token — what its TTFT is waiting for — then queues behind the writes of every running
 * stream read before it in the same turn. So once a stream's first token is out, its later
 * writes are corked here and go out when the turn's reads are done (`setImmediate` runs after
 * the poll phase), each socket's in one write, as before. A first token jumps the queue of later
 * ones, a later token waits at most one turn of the loop (a token gap is tens of milliseconds,
 * a turn a few), and nothing is reordered: one socket, one cork. A response's `end()` uncorks
 * its socket itself, so a stream's last bytes are never held.
 */
import type { Socket } from 'node:net';
import { atTurnEnd } from '../../runtime/turn-end.ts';

export class TurnWrites {
  readonly #corked = new Set<Socket>();
  readonly #schedule: (flush: () => void) => void;
  #scheduled = false;

  constructor(schedule: (flush: () => void) => void = atTurnEnd) {
    this.#schedule = schedule;
  }

  /** Holds what is written to `socket` until the end of this turn (no socket yet: nothing). */
  hold(socket: Socket | null): void {
    if (socket === null || this.#corked.has(socket)) return;
    socket.cork();
    this.#corked.add(socket);
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#schedule(this.#flush);
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    for (const socket of this.#corked) socket.uncork();
    this.#corked.clear();
  };
}

/** The process's one event loop, and its one set of held writes. */
export const TURN_WRITES = new TurnWrites();
