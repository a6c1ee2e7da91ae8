/**
 * The stream of a background response asked with `stream: true`, which outlives the connection
 * that asked for it. The run's events go at once to every reader following it in this process,
 * and to its log in the shared store (`appendEvents`), a write at most every `WRITE_MS`: those
 * that come meanwhile go together in the next. So a reader on any replica can take it up
 * from any event: `GET /v1/responses/{id}?stream=true&starting_after=N` answers the events after
 * sequence number N, then the rest as they come. A reader where it runs gets each event as the
 * run makes it; one elsewhere is told when the log grows, and reads it then (stream-readers.ts).
 *
 * A stream ends with its response's last event (`response.completed`, `response.incomplete`,
 * `response.failed`). A cancelled one just ends: OpenAI names no event for it. A log stops
 * growing at `RESPONSE_MAX_BYTES`, and a write the store refuses is tried again a second later.
 */
import type { Clock } from '../../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../../core/ports/timers.ts';
import { RESPONSE_MAX_BYTES } from '../shared/shared-store.ts';
import type { KeepingDeps } from './kept-records.ts';

export interface Time {
  readonly clock: Clock;
  readonly timers: Timers;
}

/**
 * How often a reader elsewhere reads the log of a response that runs on, for more, where the
 * store cannot tell it when the log grows.
 */
export const POLL_MS = 100;
/**
 * The least time between two writes of one log, each of which tells its readers elsewhere: a
 * fast stream's events go a few to a write, and to a read.
 */
export const WRITE_MS = 50;
/** How long a log's writer the store refused waits before it tries again. */
const RETRY_MS = 1_000;
/** The most events one write adds to the log, or one read takes from it. */
export const PAGE = 500;

/** A reader following a run in this process: the events it has not written yet, from `next`. */
export interface Follower {
  readonly events: string[];
  /** The sequence number of its next event. */
  next: number;
  ended: boolean;
  wake: (() => void) | undefined;
}

/** One background response's events as its run makes them: told to its readers, and logged. */
export class RunStream {
  readonly #keeping: KeepingDeps;
  readonly #time: Time;
  readonly #tenant: string;
  readonly #id: string;
  /** Events made so far: the next one's sequence number. */
  #made = 0;
  /** Events the log holds; those after them, still to be written, are `#unlogged`. */
  #logged = 0;
  #unlogged: string[] = [];
  /** Bytes of the events held to be logged so far, logged or not: what bounds the log. */
  #bytes = 0;
  /** The log reached its bound: it grows no more, and keeps no events to write. */
  #capped = false;
  #writing: Promise<void> | undefined;
  /** When the last write began, and the next one waiting for `WRITE_MS` to pass since. */
  #wroteMs = -Infinity;
  #next: TimerHandle | undefined;
  #ended = false;
  #handedOver = false;
  readonly #followers = new Set<Follower>();

  /** `from`: the events its log holds already (told by the replica that handed it over). */
  constructor(keeping: KeepingDeps, time: Time, tenant: string, id: string, from = 0) {
    this.#keeping = keeping;
    this.#time = time;
    this.#tenant = tenant;
    this.#id = id;
    this.#made = this.#logged = from;
  }

  /** The events made so far, those told before it included: the next one's sequence number. */
  get made(): number {
    return this.#made;
  }

  /** Whether its run was handed to another replica: its readers follow the log from there. */
  get handedOver(): boolean {
    return this.#handedOver;
  }

  /** Adds the events `sse` holds (the SSE text a response builder returns). */
  emit(sse: string): void {
    if (sse === '' || this.#ended) return;
    for (const text of sse.split('\n\n')) {
      if (text === '') continue;
      const event = `${text}\n\n`;
      const seq = this.#made++;
      if (!this.#capped) this.#hold(event);
      for (const f of this.#followers) {
        if (seq < f.next) continue;
        f.events.push(event);
        f.next = seq + 1;
        f.wake?.();
      }
    }
    this.#kick();
  }

  /**
   * No more events here: its readers end once they have them — or, `handedOver` to another
   * replica, go on reading the log; settles once the log has them.
   */
  async end(handedOver = false): Promise<void> {
    this.#ended = true;
    this.#handedOver = handedOver;
    for (const f of this.#followers) {
      f.ended = true;
      f.wake?.();
    }
    this.#next?.cancel();
    this.#next = undefined;
    while (this.#writing !== undefined) await this.#writing;
    // What a write the store refused left is tried once more.
    if (this.#unlogged.length > 0) await this.#write();
  }

  /**
   * Follows the stream from sequence number `from`. Events from `start` on are told to the
   * follower; those from `from` until `until` are in the log, to be read from there first. Past
   * the log's bound, events neither logged nor held are lost: `until` falls short of `start`.
   */
  follow(from: number): {
    readonly follower: Follower;
    readonly until: number;
    readonly start: number;
  } {
    const held = this.#made - this.#unlogged.length;
    const start = Math.max(from, held);
    const follower: Follower = {
      events: this.#unlogged.slice(start - held),
      next: Math.max(start, this.#made),
      ended: this.#ended,
      wake: undefined,
    };
    this.#followers.add(follower);
    return { follower, until: from < held ? this.#logged : from, start };
  }

  unfollow(f: Follower): void {
    this.#followers.delete(f);
  }

  /**
   * Writes what is unlogged, at once or when `WRITE_MS` has passed since the last write began;
   * what comes while one is under way, or waits, goes with it or next.
   */
  #kick(): void {
    if (this.#writing !== undefined || this.#next !== undefined || this.#ended) return;
    const { clock, timers } = this.#time;
    if (clock.now() < this.#wroteMs + WRITE_MS) {
      this.#next = timers.at(this.#wroteMs + WRITE_MS, () => {
        this.#next = undefined;
        this.#kick();
      });
      return;
    }
    this.#wroteMs = clock.now();
    this.#writing = this.#write().then((ok) => {
      this.#writing = undefined;
      if (this.#unlogged.length === 0 || this.#ended) return;
      if (ok) return this.#kick();
      // The store refused: tried again in a while, or with the next event.
      this.#next = timers.at(clock.now() + RETRY_MS, () => {
        this.#next = undefined;
        this.#kick();
      });
    });
  }

  /**
   * Holds `event` to be written, unless the log would pass its bound with it: then the log is
   * capped, and what it held let go (a store out of reach for long holds no more than that).
   */
  #hold(event: string): void {
    this.#bytes += Buffer.byteLength(event);
    if (this.#bytes > RESPONSE_MAX_BYTES) {
      this.#capped = true;
      this.#unlogged = [];
    } else this.#unlogged.push(event);
  }

  /** False when the store refused a write. */
  async #write(): Promise<boolean> {
    while (this.#unlogged.length > 0 && !this.#capped) {
      const batch = this.#unlogged.slice(0, PAGE);
      try {
        await this.#keeping.store.appendEvents(this.#tenant, this.#id, batch);
      } catch {
        // The store out of reach: these go with the next write.
        return false;
      }
      this.#logged += batch.length;
      this.#unlogged.splice(0, batch.length);
    }
    return true;
  }
}
