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
 *
 * The same holds for the reads: a running stream's later tokens are only queued where they are
 * read (`readLater`) and handled here, before the sockets are uncorked, so a first token waits
 * for no other stream's token bookkeeping either, only for Node's own reads ahead of it.
 */
import type { Socket } from 'node:net';
import { atTurnEnd } from '../../runtime/turn-end.ts';

export class TurnWrites {
  readonly #corked = new Set<Socket>();
  #reads: (() => void)[] = [];
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
    this.#atEnd();
  }

  /**
   * Runs `read` at the end of this turn, in the order asked, before the held writes go out. It
   * must handle its own errors.
   */
  readLater(read: () => void): void {
    this.#reads.push(read);
    this.#atEnd();
  }

  #atEnd(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#schedule(this.#flush);
  }

  readonly #flush = (): void => {
    try {
      // Reads first: the tokens they hand on are written to sockets held in this same flush.
      // A read handles its own errors; should one throw, the writes still go out.
      for (let i = 0; i < this.#reads.length; i++) this.#reads[i]();
    } finally {
      this.#reads = [];
      this.#scheduled = false;
      for (const socket of this.#corked) socket.uncork();
      this.#corked.clear();
    }
  };
}

/** The process's one event loop, and its one set of held writes. */
export const TURN_WRITES = new TurnWrites();
