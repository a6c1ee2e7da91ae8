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
 * its socket itself, so a stream's last bytes are never held. A turn under a flood is not a
 * few milliseconds: one that reads a thousand requests ran 30–45 ms, and tokens held at its
 * start went out after all of them. So where the loop takes up more work (`flushIfLate`: a
 * request read, a batch of tokens from the fleet's thread), what has waited `LATE_MS` goes out
 * first.
 *
 * The same holds for the reads: a running stream's later tokens are only queued where they are
 * read (`readLater`) and handled here, before the sockets are uncorked, so a first token waits
 * for no other stream's token bookkeeping either, only for Node's own reads ahead of it.
 *
 * What must know when a held token left — the gap its client sees — gives `hold` a `sent`: it
 * is called with the time once that socket's writes have gone to the kernel. A turn's uncorks
 * of a thousand streams take milliseconds, and a stream is not in the same place in every
 * turn's loop, so each socket's is timed on its own.
 */
import type { Socket } from 'node:net';
import { atTurnEnd } from '../../runtime/turn-end.ts';
import { wallClock } from '../../runtime/wall-clock.ts';
import type { Sent } from '../backend.ts';

/** How long held writes may wait while the loop takes up other work (`flushIfLate`). */
const LATE_MS = 4;

export class TurnWrites {
  // Arrays kept from turn to turn, filled up to a count: a turn of hundreds of streams
  // allocates nothing here.
  readonly #held: (Socket | null)[] = [];
  #heldCount = 0;
  /** What to call once each held socket's writes are out, by its place in `#held`. */
  readonly #sent: (Sent | undefined)[] = [];
  /** The turn each socket was last held in: a socket is corked once a turn. */
  readonly #heldIn = new WeakMap<Socket, number>();
  #turn = 0;
  readonly #reads: (() => void)[] = [];
  #readCount = 0;
  readonly #schedule: (flush: () => void) => void;
  readonly #now: () => number;
  #scheduled = false;
  /** When the first thing still held this turn was held. */
  #heldSinceMs = 0;

  /** `now`: the clock a `sent` is called with (default the wall clock's milliseconds). */
  constructor(schedule: (flush: () => void) => void = atTurnEnd, now = wallClock.now) {
    this.#schedule = schedule;
    this.#now = now;
  }

  /**
   * Holds what is written to `socket` until the end of this turn, and calls `sent` once it has
   * gone out (no socket yet: nothing is held, and `sent` is called now).
   */
  hold(socket: Socket | null, sent?: Sent): void {
    if (socket === null) return sent?.(this.#now());
    if (this.#heldIn.get(socket) === this.#turn) {
      if (sent === undefined) return;
      // Rare (a stream asks once a turn, and its first write in the turn asks): look it up.
      const i = this.#held.indexOf(socket);
      const before = this.#sent[i];
      this.#sent[i] = before === undefined ? sent : (ms) => bothSent(before, sent, ms);
      return;
    }
    // A keep-alive socket is in the map from its first hold on: updating it allocates nothing.
    this.#heldIn.set(socket, this.#turn);
    if (this.#heldCount === 0 && this.#readCount === 0) this.#heldSinceMs = this.#now();
    socket.cork();
    this.#sent[this.#heldCount] = sent;
    this.#held[this.#heldCount++] = socket;
    this.#atEnd();
  }

  /**
   * Runs `read` at the end of this turn, in the order asked, before the held writes go out. It
   * should handle its own errors: one that throws does not stop the others, and is thrown again
   * once the writes are out.
   */
  readLater(read: () => void): void {
    if (this.#heldCount === 0 && this.#readCount === 0) this.#heldSinceMs = this.#now();
    this.#reads[this.#readCount++] = read;
    this.#atEnd();
  }

  /**
   * Lets what is held go now, mid-turn, if it has waited `LATE_MS` or more: called where the
   * loop takes up other work (a request read, a batch of tokens from the fleet's thread). A
   * turn that reads a flood of requests runs for tens of milliseconds, and every token held in
   * it would wait for all of them, a lateness its client sees in its gap; now a token waits at
   * most that long and one more piece of work. An error a `sent` or a read throws is thrown
   * again from a turn of its own, not into the caller's work.
   */
  flushIfLate(): void {
    if (this.#heldCount === 0 && this.#readCount === 0) return;
    if (this.#now() - this.#heldSinceMs < LATE_MS) return;
    try {
      this.#drain();
    } catch (e) {
      this.#schedule(() => {
        throw e;
      });
    }
  }

  #atEnd(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#schedule(this.#flush);
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    this.#drain();
  };

  #drain(): void {
    // Reads first: the tokens they hand on are written to sockets held in this same flush.
    let thrown: { readonly error: unknown } | undefined;
    for (let i = 0; i < this.#readCount; i++) {
      const read = this.#reads[i];
      this.#reads[i] = NOTHING;
      try {
        read();
      } catch (error) {
        thrown ??= { error };
      }
    }
    this.#readCount = 0;
    this.#turn++;
    for (let i = 0; i < this.#heldCount; i++) {
      this.#held[i]?.uncork();
      this.#held[i] = null;
      const sent = this.#sent[i];
      if (sent === undefined) continue;
      this.#sent[i] = undefined;
      try {
        sent(this.#now());
      } catch (error) {
        thrown ??= { error };
      }
    }
    this.#heldCount = 0;
    if (thrown !== undefined) throw thrown.error;
  }
}

const NOTHING = (): void => {};

/** Two `sent`s of one socket in one turn (rare: a stream registers one a turn): both run. */
function bothSent(first: Sent, second: Sent, atMs: number): void {
  try {
    first(atMs);
  } finally {
    second(atMs);
  }
}

/** The process's one event loop, and its one set of held writes. */
export const TURN_WRITES = new TurnWrites();
