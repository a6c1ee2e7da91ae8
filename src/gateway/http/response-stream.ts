/**
 * The stream of a background response asked with `stream: true`, which outlives the connection
 * that asked for it. The run's events go at once to every reader following it in this process,
 * and to its log in the shared store (`appendEvents`), a write at most every `WRITE_MS`: those
 * that come meanwhile go together in the next. So a reader on any replica can take it up
 * from any event: `GET /v1/responses/{id}?stream=true&starting_after=N` answers the events after
 * sequence number N, then the rest as they come. A reader where it runs gets each event as the
 * run makes it; one elsewhere reads the log every `POLL_MS`.
 *
 * A stream ends with its response's last event (`response.completed`, `response.incomplete`,
 * `response.failed`). A cancelled one just ends: OpenAI names no event for it. A log stops
 * growing at `RESPONSE_MAX_BYTES`, and a write the store refuses is tried again a second later.
 * A reader elsewhere that finds no more in the log reads the response's record, and ends when
 * the response has: when the log lacks its end, with `response.failed` where it failed (its
 * runner gone), else an `error` event, the response whole a GET away.
 */
import type { ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { SSE_HEADERS } from '../../openai/index.ts';
import type { Clock } from '../../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../../core/ports/timers.ts';
import type { Ms } from '../../core/request/units.ts';
import { RESPONSE_MAX_BYTES } from '../shared/shared-store.ts';
import type { Answer } from './answer.ts';
import { loadSettledHead, type KeepingDeps } from './kept-responses.ts';

/** How often a reader elsewhere reads the log of a response that runs on, for more. */
export const POLL_MS = 100;
/**
 * The least time between two writes of one log: half the readers' poll, so a reader elsewhere
 * waits no longer, and a fast stream's events go a few to a write.
 */
export const WRITE_MS = POLL_MS / 2;
/** How often that reader, finding no more, reads the response's record to learn it has ended. */
const RECORD_MS = 1_000;
/** How long a log's writer the store refused waits before it tries again. */
const RETRY_MS = 1_000;
/** The most events one write adds to the log, or one read takes from it. */
const PAGE = 500;

/** The events that end a response's stream. */
const LAST = /^event: response\.(completed|incomplete|failed)\n/;

/** A reader following a run in this process: the events it has not written yet, from `next`. */
interface Follower {
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
  /** Bytes of the events logged, and of those held to be: the two together are bounded. */
  #bytes = 0;
  #heldBytes = 0;
  /** The log reached its bound: it grows no more, and keeps no events to write. */
  #capped = false;
  #writing: Promise<void> | undefined;
  /** When the last write began, and the next one waiting for `WRITE_MS` to pass since. */
  #wroteMs = -Infinity;
  #next: TimerHandle | undefined;
  #ended = false;
  readonly #followers = new Set<Follower>();

  constructor(keeping: KeepingDeps, time: Time, tenant: string, id: string) {
    this.#keeping = keeping;
    this.#time = time;
    this.#tenant = tenant;
    this.#id = id;
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

  /** No more events: its readers end once they have them; settles once the log has them. */
  async end(): Promise<void> {
    this.#ended = true;
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
    this.#heldBytes += Buffer.byteLength(event);
    if (this.#bytes + this.#heldBytes > RESPONSE_MAX_BYTES) {
      this.#capped = true;
      this.#unlogged = [];
      this.#heldBytes = 0;
    } else this.#unlogged.push(event);
  }

  /** False when the store refused a write. */
  async #write(): Promise<boolean> {
    while (this.#unlogged.length > 0 && !this.#capped) {
      const batch = this.#unlogged.slice(0, PAGE);
      const bytes = batch.reduce((n, e) => n + Buffer.byteLength(e), 0);
      try {
        await this.#keeping.store.appendEvents(this.#tenant, this.#id, batch);
      } catch {
        // The store out of reach: these go with the next write.
        return false;
      }
      this.#bytes += bytes;
      this.#heldBytes -= bytes;
      this.#logged += batch.length;
      this.#unlogged.splice(0, batch.length);
    }
    return true;
  }
}

/** Where a reader's events go: the client's connection. */
export interface EventsOut {
  write(text: string): void;
  end(): void;
  /** The client has gone: nothing more is written. */
  readonly gone: boolean;
  /** Resolves when the client has gone. */
  readonly leaving: Promise<void>;
}

/** The SSE answer a reader writes to: Node's response straight, or a web stream. */
export function eventsAnswer(
  outgoing: ServerResponse | undefined,
  extra: Record<string, string>,
): { readonly answer: Answer; readonly out: EventsOut } {
  const headers = { ...SSE_HEADERS, ...extra };
  if (outgoing !== undefined)
    return { answer: RESPONSE_ALREADY_SENT, out: new NodeOut(outgoing, headers) };
  const out = new WebOut();
  return { answer: new Response(out.body, { status: 200, headers }), out };
}

/** Events written to Node's response as they come. */
class NodeOut implements EventsOut {
  readonly #res: ServerResponse;
  readonly leaving: Promise<void>;

  constructor(res: ServerResponse, headers: Record<string, string>) {
    this.#res = res;
    res.writeHead(200, headers);
    this.leaving = new Promise((resolve) => res.once('close', () => resolve()));
  }

  write(text: string): void {
    if (!this.#res.destroyed) this.#res.write(text);
  }

  end(): void {
    this.#res.end();
  }

  get gone(): boolean {
    return this.#res.destroyed;
  }
}

/** Events enqueued on a web stream, the body of a web Response. */
class WebOut implements EventsOut {
  readonly body: ReadableStream<Uint8Array>;
  readonly leaving: Promise<void>;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #gone = false;
  #left: () => void = () => {};

  constructor() {
    this.leaving = new Promise((resolve) => (this.#left = resolve));
    this.body = new ReadableStream<Uint8Array>({
      start: (c) => void (this.#controller = c),
      cancel: () => this.#leave(),
    });
  }

  write(text: string): void {
    if (!this.#gone) this.#controller.enqueue(Buffer.from(text));
  }

  end(): void {
    if (this.#gone) return;
    this.#controller.close();
    this.#leave();
  }

  get gone(): boolean {
    return this.#gone;
  }

  #leave(): void {
    this.#gone = true;
    this.#left();
  }
}

export interface Time {
  readonly clock: Clock;
  readonly timers: Timers;
}

export interface FollowDeps extends KeepingDeps, Time {}

/** A client's connection, and the sequence number of the next event it is to be sent. */
class Reader {
  readonly out: EventsOut;
  at: number;

  constructor(out: EventsOut, at: number) {
    this.out = out;
    this.at = at;
  }

  send(events: readonly string[]): void {
    for (const e of events) this.out.write(e);
    this.at += events.length;
  }

  /** The event that ends a stream short: `code`, why, and where the client got to. */
  error(code: string, message: string): void {
    const error = { type: 'error', code, message, param: null, sequence_number: this.at };
    this.out.write(`event: error\ndata: ${JSON.stringify(error)}\n\n`);
  }
}

/**
 * Writes `id`'s events after `startingAfter` to `out`, as they come, until its stream ends or
 * its client goes: from `run` when it runs here, else from its log. The store failing midway
 * ends it with an `error` event; the client takes it up again from where it got to.
 */
export async function follow(
  deps: FollowDeps,
  tenant: string,
  id: string,
  startingAfter: number,
  run: RunStream | undefined,
  out: EventsOut,
): Promise<void> {
  const reader = new Reader(out, startingAfter + 1);
  try {
    if (run !== undefined) await followRun(deps, tenant, id, run, reader);
    else await followLog(deps, tenant, id, reader);
  } catch {
    reader.error(
      'service_unavailable',
      'the store of responses is unreachable now; take the stream up again later (starting_after)',
    );
  } finally {
    out.end();
  }
}

async function followRun(
  deps: FollowDeps,
  tenant: string,
  id: string,
  run: RunStream,
  reader: Reader,
): Promise<void> {
  const { follower, until, start } = run.follow(reader.at);
  const out = reader.out;
  try {
    while (reader.at < until && !out.gone) {
      const want = Math.min(PAGE, until - reader.at);
      const page = await deps.store.readEvents(tenant, id, reader.at, want);
      if (page.length === 0) break;
      reader.send(page);
    }
    if (reader.at < start) return lacking(reader);
    while (!out.gone) {
      reader.send(follower.events.splice(0));
      if (follower.ended) return;
      await Promise.race([new Promise<void>((wake) => (follower.wake = wake)), out.leaving]);
      follower.wake = undefined;
    }
  } finally {
    run.unfollow(follower);
  }
}

async function followLog(
  deps: FollowDeps,
  tenant: string,
  id: string,
  reader: Reader,
): Promise<void> {
  let last = '';
  let recordReadMs = -Infinity;
  // Whether its record was found ended at the last read.
  let ended = false;
  while (!reader.out.gone) {
    const page = await deps.store.readEvents(tenant, id, reader.at, PAGE);
    reader.send(page);
    last = page.at(-1) ?? last;
    if (LAST.test(last)) return;
    if (page.length === PAGE) continue;
    if (page.length === 0 && deps.clock.now() - recordReadMs >= RECORD_MS) {
      recordReadMs = deps.clock.now();
      // Its last event is logged once its record is kept as it ended: one more read, a
      // record's read later, finds it. A reader asking past the end finds the log complete.
      const tail = await deps.store.readEvents(tenant, id, -1, 1);
      if (LAST.test(tail[0] ?? '')) return;
      const kept = await loadSettledHead(deps, tenant, id);
      const status = kept?.response.status;
      if (status === 'cancelled') return;
      if (ended && status === 'failed') return failedAt(reader, kept?.response);
      if (ended && status !== 'queued' && status !== 'in_progress') return lacking(reader);
      ended = status !== 'queued' && status !== 'in_progress';
    }
    await sleep(deps, POLL_MS, reader.out.leaving);
  }
}

/**
 * The log of a response that failed ends before its last event: its runner went before it could
 * write it (lost, kept-responses.ts `loadSettled`). The client gets the event it would have.
 */
function failedAt(reader: Reader, response: object | undefined): void {
  const failed = { type: 'response.failed', sequence_number: reader.at, response };
  reader.send([`event: response.failed\ndata: ${JSON.stringify(failed)}\n\n`]);
}

/** The log ends before the stream did: the client is told, and where the rest is. */
function lacking(reader: Reader): void {
  reader.error(
    'stream_incomplete',
    'the rest of this stream was not kept (its log reached its bound, or the store failed); GET the response whole',
  );
}

function sleep(deps: FollowDeps, ms: Ms, leaving: Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    const timer = deps.timers.at(deps.clock.now() + ms, resolve);
    void leaving.then(() => {
      timer.cancel();
      resolve();
    });
  });
}
