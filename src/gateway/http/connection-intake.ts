/**
 * New connections, let in at the pace the event loop keeps.
 *
 * A burst of clients connecting at once is a burst of ready sockets, and Node reads them in
 * whatever poll phase finds them ready: libuv polls again at once for as long as its event array
 * comes back full. Three thousand connections took turns of 400–800 ms on a 2-core VM (a bare
 * server answering each 503 at once, one of 300 ms), and a stream already running relays nothing
 * while a turn lasts: every admitted stream took a gap that long, then another with the next
 * turn. Admission cannot keep a promise about token gaps through that.
 *
 * So the listener accepts with its sockets paused (nothing is read; accepting alone is cheap)
 * and hands them here. At most `window` connections are let in — read from — whose first
 * request the gateway has not yet seen; each request seen, or connection closed, lets the next
 * one in, oldest first. No poll phase then reads more than a window's worth of new connections,
 * whatever arrives, and the backlog drains as fast as requests are taken (the window is clocked
 * by them, as TCP's is by its acks). A connection let in that sends nothing for QUIET_MS (a slow
 * client, a pool's spare connection) leaves the window, still read: it must not hold the door,
 * and what it sends later is one connection's work. A connection that waited in line for its place
 * widens the window by one: quiet ones cost the loop nothing to read, and connections that never
 * send, arriving faster than a window's worth each QUIET_MS, would otherwise keep a line behind
 * them that only grows.
 *
 * The window follows the turns it makes, as TCP's follows its losses: it doubles after each turn
 * within the budget that read most of a window (slow start, again after each quiet spell), until
 * a turn that read new connections runs longer than the budget; it is halved then, and grows by
 * an eighth after each turn within it. The budget is the caller's: the gateway gives the lag line
 * its shedder sheds at, tightened while streams with a token-gap objective run, so the turns
 * leave those streams' relays on time.
 *
 * Connections that wait are lateness by another name: `lateMs` is how long the oldest has
 * waited, and past `lineLimitMs` the gateway sheds new requests, cheaply, so that the line clears
 * at what Node can answer.
 */
import type { Clock } from '../../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../../core/ports/timers.ts';
import type { Ms } from '../../core/request/units.ts';
import { atTurnEnd } from '../../runtime/turn-end.ts';

/** What the intake needs of a connection: Node's socket, accepted paused. */
export interface PausedConnection {
  readonly destroyed: boolean;
  resume(): unknown;
  destroy(): unknown;
  once(event: 'close', listener: () => void): unknown;
}

/** The window at first, and the smallest and largest it moves between. */
const FIRST_WINDOW = 16;
const MIN_WINDOW = 2;
const MAX_WINDOW = 1024;
/**
 * A line whose oldest connection has waited this share of the tightest first-token objective
 * sheds new requests: a quarter of it (500 ms of the default interactive class's 2 s) spent
 * before a request is even read. Below it, the requests let in are admitted or refused by
 * admission, which counts their wait (a burst of 300 or 600 at an idle fleet is then served
 * whole; shedding at 200 ms of wait served 110 of 300). Past it the line clears at the cost of
 * a shed, so refusals stay quick.
 */
const LINE_SHARE_OF_TTFT = 0.25;
/** The line's limit when no class has a first-token objective. */
const LINE_DEFAULT_MS = 500;

/** How long the line may keep its oldest waiting before new requests are shed. */
export function lineLimitMs(tightestTtftMs: Ms): Ms {
  return Number.isFinite(tightestTtftMs) ? LINE_SHARE_OF_TTFT * tightestTtftMs : LINE_DEFAULT_MS;
}

/** How long a connection let in holds its place in the window without sending a request. */
const QUIET_MS = 100;

export class ConnectionIntake {
  /** Waiting connections, oldest first, from `#head` on; `#since[i]` is when the i-th queued. */
  #waiting: PausedConnection[] = [];
  #since: Ms[] = [];
  #head = 0;
  /** Let in, their first request not yet seen: when each was let in, oldest first. */
  readonly #reading = new Map<PausedConnection, Ms>();
  /** When each connection that had to wait was accepted, until its first request is seen. */
  readonly #accepted = new WeakMap<PausedConnection, Ms>();
  #window = FIRST_WINDOW;
  /** Doubling after each turn within budget, until the first over it (TCP's slow start). */
  #slowStart = true;
  /** A turn end is set; `#chained` when a turn end set it (turns in a row). */
  #turnEndSet = false;
  #chained = false;
  /** A turn end is running. */
  #ending = false;
  #lastTurnEndMs: Ms = 0;
  /** The turn end before the last. */
  #prevTurnEndMs: Ms = -Infinity;
  /** Connections let in, and first requests seen, since the last turn end. */
  #letInThisTurn = 0;
  #seenThisTurn = 0;
  /** Set while connections wait behind a full window: when its oldest goes quiet. */
  #quietCheck: TimerHandle | null = null;
  readonly #clock: Clock;
  readonly #timers: Timers;
  readonly #budgetMs: () => Ms;
  readonly #schedule: (fn: () => void) => void;

  /** `budgetMs`: the longest turn the intake should make, read at each turn end. */
  constructor(
    clock: Clock,
    timers: Timers,
    budgetMs: () => Ms,
    schedule: (fn: () => void) => void = atTurnEnd,
  ) {
    this.#clock = clock;
    this.#timers = timers;
    this.#budgetMs = budgetMs;
    this.#schedule = schedule;
  }

  /** Connections waiting to be let in. */
  get waiting(): number {
    return this.#waiting.length - this.#head;
  }

  /** How long the oldest waiting connection has waited; 0 when none waits. */
  get lateMs(): Ms {
    return this.waiting === 0 ? 0 : this.#clock.now() - this.#since[this.#head];
  }

  /** How many connections may be read from at once before their first request is seen. */
  get window(): number {
    return this.#window;
  }

  /** A connection was accepted, paused: let in now, or when its turn comes. */
  take(c: PausedConnection): void {
    c.once('close', () => this.#reading.delete(c) && this.#next());
    if (this.waiting === 0 && this.#room()) {
      this.#letIn(c);
      return;
    }
    const now = this.#clock.now();
    this.#accepted.set(c, now);
    this.#waiting.push(c);
    this.#since.push(now);
    this.#setTurnEnd();
    this.#watchQuiet();
  }

  /**
   * A request arrived on `c`: if it was its first, the next waiting connection may come in.
   * Returns when `c` was accepted if it had to wait to be let in, so that its client's wait in
   * line counts toward its request's: its client sent it on connecting, as HTTP clients do (one
   * that let a chance to send go by, quiet, is not known to have waited, and gets undefined).
   */
  seen(c: PausedConnection): Ms | undefined {
    if (!this.#reading.delete(c)) return undefined;
    this.#seenThisTurn++;
    this.#next();
    const accepted = this.#accepted.get(c);
    if (accepted !== undefined) this.#accepted.delete(c);
    return accepted;
  }

  /** Closes every waiting connection unread (the gateway is shutting down). */
  close(): void {
    this.#quietCheck?.cancel();
    this.#quietCheck = null;
    for (let i = this.#head; i < this.#waiting.length; i++) this.#waiting[i].destroy();
    this.#waiting = [];
    this.#since = [];
    this.#head = 0;
  }

  /**
   * Whether the window has room, once connections quiet for QUIET_MS have left it. Quiet means
   * the loop could have read it: two turns have ended since it was let in (what its client sent
   * is read in the first poll after it is resumed). In a turn that runs longer than QUIET_MS, as
   * a flood's do, the timer that looks for quiet ones fires before that poll; a connection taken
   * for quiet then would lose its wait in line, and its request would be admitted as if it had
   * just arrived.
   */
  #room(): boolean {
    if (this.#reading.size < this.#window) return true;
    const quietSince = this.#clock.now() - QUIET_MS;
    let quiet = 0;
    for (const [c, at] of this.#reading) {
      if (at > quietSince || at >= this.#prevTurnEndMs) break;
      this.#reading.delete(c);
      this.#accepted.delete(c);
      quiet++;
    }
    // Connections waited in line for places held by ones that never sent: a place more for each
    // let in for them (a slow-header attack of a few hundred connections a second kept every
    // client waiting in line, longer and longer, behind a window that never widened).
    if (quiet > 0 && this.waiting > 0) {
      this.#window = Math.min(MAX_WINDOW, this.#window + Math.min(quiet, this.waiting));
    }
    return this.#reading.size < this.#window;
  }

  #letIn(c: PausedConnection): void {
    this.#reading.set(c, this.#clock.now());
    this.#letInThisTurn++;
    c.resume();
    this.#setTurnEnd();
  }

  #next(): void {
    while (this.waiting > 0 && this.#room()) {
      const c = this.#waiting[this.#head++];
      if (!c.destroyed) this.#letIn(c);
    }
    if (this.waiting === 0) {
      this.#waiting = [];
      this.#since = [];
      this.#head = 0;
      return;
    }
    this.#watchQuiet();
  }

  /** While connections wait behind a full window: look again when its oldest goes quiet. */
  #watchQuiet(): void {
    if (this.#quietCheck !== null || this.#reading.size === 0) return;
    const [oldestAt] = this.#reading.values();
    const at = Math.max(oldestAt + QUIET_MS, this.#clock.now() + 1);
    this.#quietCheck = this.#timers.at(at, () => {
      this.#quietCheck = null;
      this.#next();
    });
  }

  #setTurnEnd(): void {
    if (this.#turnEndSet) return;
    this.#turnEndSet = true;
    // Set while a turn end runs, it is the next turn's end.
    this.#chained = this.#ending;
    this.#schedule(this.#turnEnd);
  }

  readonly #turnEnd = (): void => {
    this.#turnEndSet = false;
    const now = this.#clock.now();
    // A turn's length is known when this turn end follows the last one; a long turn that read
    // no new connection was long for other reasons (streams to relay, a collection).
    if (this.#chained && this.#seenThisTurn > 0) {
      if (now - this.#lastTurnEndMs > this.#budgetMs()) {
        this.#window = Math.max(MIN_WINDOW, Math.floor(this.#window / 2));
        this.#slowStart = false;
      } else if (this.#seenThisTurn * 2 >= this.#window) {
        const growth = this.#slowStart ? this.#window : Math.ceil(this.#window / 8);
        this.#window = Math.min(MAX_WINDOW, this.#window + growth);
      }
    }
    const busy = this.#letInThisTurn + this.#seenThisTurn > 0;
    this.#prevTurnEndMs = this.#lastTurnEndMs;
    this.#lastTurnEndMs = now;
    this.#letInThisTurn = 0;
    this.#seenThisTurn = 0;
    this.#ending = true;
    this.#next();
    // The turn after one that let connections in or read them is watched too. With nothing
    // read or waiting, the next burst starts slow again.
    if (busy || this.#letInThisTurn > 0) this.#setTurnEnd();
    else if (this.#reading.size === 0 && this.waiting === 0) this.#slowStart = true;
    this.#ending = false;
  };
}
