/**
 * The readers of a background response's stream (response-stream.ts): its POST's client, and
 * `GET /v1/responses/{id}?stream=true&starting_after=N` on any replica. A reader where the
 * response runs follows its run, reading first from the log what it missed; one elsewhere is
 * told the events as the log takes them (`watchEvents`: Redis pub/sub), reads the log where
 * they leave a gap, and once a second untold — every `POLL_MS` where the store cannot tell it. A
 * reader that finds no more in the log reads the response's record,
 * and ends when the response has: when the log lacks its end, with `response.failed` where it
 * failed (its runner gone), else an `error` event, the response whole a GET away. The store
 * failing midway, or the replica shutting down, ends it with an `error` event at the sequence
 * number it got to, so its client takes it up again from there (on another replica). The log is
 * read a page at a time, the next once the client has taken the last: a client that does not
 * read holds a page of the gateway's memory, not its whole log.
 */
import type { ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { SSE_HEADERS } from '../../openai/index.ts';
import type { Ms } from '../../core/request/units.ts';
import type { Answer } from './answer.ts';
import { loadSettledHead, type KeepingDeps } from './kept-records.ts';
import { PAGE, POLL_MS, type RunStream, type Time } from './response-stream.ts';

/** How often a reader elsewhere, finding no more, reads the record to learn it has ended. */
const RECORD_MS = 1_000;
/** How often a reader elsewhere that is told the events as the log takes them reads it untold. */
const WATCHED_POLL_MS = 1_000;

/** The events that end a response's stream. */
const LAST = /^event: response\.(completed|incomplete|failed)\n/;

/** Where a reader's events go: the client's connection. */
export interface EventsOut {
  write(text: string): void;
  /** Settles once what was written has gone to the client (or it has gone). */
  end(): Promise<void>;
  /**
   * Settles once what was written has left this gateway's buffer for the client — at once when
   * it has — or the client has gone: a reader that does not read holds one page, not a log.
   */
  drained(): Promise<void>;
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

  end(): Promise<void> {
    const ended = new Promise<void>((resolve) => this.#res.end(() => resolve()));
    // A connection destroyed never finishes: it has closed.
    return Promise.race([ended, this.leaving]);
  }

  drained(): Promise<void> {
    const res = this.#res;
    if (res.destroyed || !res.writableNeedDrain) return Promise.resolve();
    return Promise.race([new Promise<void>((resolve) => res.once('drain', resolve)), this.leaving]);
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
  /** A `drained` waiting for the reader to pull. */
  #pulled: (() => void) | undefined;

  constructor() {
    this.leaving = new Promise((resolve) => (this.#left = resolve));
    this.body = new ReadableStream<Uint8Array>({
      start: (c) => void (this.#controller = c),
      pull: () => {
        this.#pulled?.();
        this.#pulled = undefined;
      },
      cancel: () => this.#leave(),
    });
  }

  drained(): Promise<void> {
    if (this.#gone || (this.#controller.desiredSize ?? 1) > 0) return Promise.resolve();
    return Promise.race([new Promise<void>((resolve) => (this.#pulled = resolve)), this.leaving]);
  }

  write(text: string): void {
    if (!this.#gone) this.#controller.enqueue(Buffer.from(text));
  }

  async end(): Promise<void> {
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

export interface FollowDeps extends KeepingDeps, Time {
  /** Resolves when the replica shuts down: its readers end, telling their clients so. */
  readonly closing?: Promise<void>;
}

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

  /** `send`, then wait for the client to take them: the log is read a page at a time. */
  async sendPaced(events: readonly string[]): Promise<void> {
    this.send(events);
    await this.out.drained();
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
  const closable = new Closable(out, deps.closing);
  const reader = new Reader(closable, startingAfter + 1);
  try {
    if (run !== undefined) await followRun(deps, tenant, id, run, reader);
    else await followLog(deps, tenant, id, reader);
  } catch {
    reader.error(
      'service_unavailable',
      'the store of responses is unreachable now; take the stream up again later (starting_after)',
    );
  } finally {
    // Its replica shutting down, the client is told where it got to, to go on elsewhere.
    if (closable.closed && !out.gone)
      reader.error(
        'shutting_down',
        'this gateway replica is shutting down; take the stream up again on another (starting_after)',
      );
    await out.end();
  }
}

/** A client's connection that its replica's shutdown ends too: its readers stop writing. */
class Closable implements EventsOut {
  readonly #out: EventsOut;
  readonly leaving: Promise<void>;
  closed = false;

  constructor(out: EventsOut, closing: Promise<void> = new Promise(() => {})) {
    this.#out = out;
    const closed = closing.then(() => void (this.closed = true));
    this.leaving = Promise.race([out.leaving, closed]);
  }

  write(text: string): void {
    this.#out.write(text);
  }

  end(): Promise<void> {
    return this.#out.end();
  }

  drained(): Promise<void> {
    return Promise.race([this.#out.drained(), this.leaving]);
  }

  get gone(): boolean {
    return this.closed || this.#out.gone;
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
      await reader.sendPaced(page);
    }
    if (reader.at < start) return lacking(reader);
    while (!out.gone) {
      reader.send(follower.events.splice(0));
      // Handed to another replica, it goes on there: the rest is in its log.
      if (follower.ended) return run.handedOver ? followLog(deps, tenant, id, reader) : undefined;
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
  const growth: Growth = { told: [], wake: () => {} };
  const unwatch = await deps.store
    .watchEvents(tenant, id, (from, events) => {
      growth.told.push({ from, events });
      growth.wake();
    })
    .catch(() => undefined);
  // Watched, it is told the events as the log takes them, and reads the log once a second.
  const everyMs = unwatch === undefined ? POLL_MS : WATCHED_POLL_MS;
  try {
    await readLog(deps, tenant, id, reader, growth, everyMs);
  } finally {
    unwatch?.();
  }
}

/** The events a log's watcher was told and has not sent yet; what wakes its reader. */
interface Growth {
  readonly told: { readonly from: number; readonly events: readonly string[] }[];
  wake: () => void;
}

/**
 * Sends `id`'s events to `reader` from where it got to, until its stream ends or the client
 * goes: those it is told as they come (`growth`), reading the log where they leave a gap, and
 * `everyMs` after the last it was told.
 */
async function readLog(
  deps: FollowDeps,
  tenant: string,
  id: string,
  reader: Reader,
  growth: Growth,
  everyMs: Ms,
): Promise<void> {
  let last = '';
  let recordReadMs = -Infinity;
  // Whether its record was found ended at the last read.
  let ended = false;
  let read = true;
  while (!reader.out.gone) {
    if (read) {
      const page = await deps.store.readEvents(tenant, id, reader.at, PAGE);
      await reader.sendPaced(page);
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
      read = false;
    }
    // What it was told goes on from where the reader got to; a gap (a message lost) is read.
    for (let next = growth.told.shift(); next !== undefined; next = growth.told.shift()) {
      if (next.from > reader.at) {
        read = true;
        break;
      }
      const fresh = next.events.slice(reader.at - next.from);
      reader.send(fresh);
      last = fresh.at(-1) ?? last;
      if (LAST.test(last)) return;
    }
    if (read) continue;
    await sleep(deps, everyMs, reader.out.leaving, (w) => (growth.wake = w));
    // Untold for that long: the log is read, and the record when the log has no more.
    read = growth.told.length === 0;
  }
}

/**
 * The log of a response that failed ends before its last event: its runner went before it could
 * write it (lost, kept-records.ts `loadSettled`). The client gets the event it would have.
 */
function failedAt(reader: Reader, response: object | undefined): void {
  reader.send([failedEvent(reader.at, response)]);
}

/** The `response.failed` event numbered `seq`, of `response` as it was kept failed. */
export function failedEvent(seq: number, response: object | undefined): string {
  const failed = { type: 'response.failed', sequence_number: seq, response };
  return `event: response.failed\ndata: ${JSON.stringify(failed)}\n\n`;
}

/** The log ends before the stream did: the client is told, and where the rest is. */
function lacking(reader: Reader): void {
  reader.error(
    'stream_incomplete',
    'the rest of this stream was not kept (its log reached its bound, or the store failed); GET the response whole',
  );
}

/** Waits `ms`, or until the client leaves or `wakeWith`'s function is called, if sooner. */
function sleep(
  deps: FollowDeps,
  ms: Ms,
  leaving: Promise<void>,
  wakeWith: (wake: () => void) => void,
): Promise<void> {
  return new Promise((resolve) => {
    const timer = deps.timers.at(deps.clock.now() + ms, resolve);
    const wake = () => {
      timer.cancel();
      resolve();
    };
    wakeWith(wake);
    void leaving.then(wake);
  });
}
