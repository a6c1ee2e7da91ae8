/**
 * What a completion handler answers: a whole answer — status, headers, a JSON body — or a
 * stream. A whole answer is plain data, so the server that carries the request writes it the
 * cheapest way it has: Node's response straight (`writeWhole`: one head, one body, its length
 * known), or a Web-standard Response in-process (`toResponse`). A refusal under overload is
 * exactly that: no Error object, no web Response, no stream.
 */
import type { ServerResponse } from 'node:http';
import type { OpenAiError } from '../../openai/index.ts';
import { atTurnEnd } from '../../runtime/turn-end.ts';

/** One answer's: its headers object is its own, so naming or sizing it adds to it in place. */
export interface Whole {
  readonly kind: 'whole';
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** The request goes on after this answer (a background response), and ends its trace itself. */
  readonly detached?: true;
}

/** A stream: a web Response in-process, or Node's already answered (RESPONSE_ALREADY_SENT). */
export type Answer = Whole | Response;

/** `headers` becomes the answer's own, not copied: pass a fresh object. */
export function whole(status: number, headers: Record<string, string>, body: string): Whole {
  headers['content-type'] = 'application/json';
  return { kind: 'whole', status, headers, body };
}

/** An OpenAI error as a whole answer. */
export function errorWhole(e: OpenAiError, headers: Record<string, string> = {}): Whole {
  return whole(e.status, { ...headers }, JSON.stringify(e.body()));
}

export function isWhole(a: Answer): a is Whole {
  return (a as Partial<Whole>).kind === 'whole';
}

export function toResponse(a: Answer): Response {
  return isWhole(a) ? new Response(a.body, { status: a.status, headers: a.headers }) : a;
}

/** One head and one body, the body's length declared: Node writes both at once. */
export function writeWhole(res: ServerResponse, a: Whole): void {
  if (res.headersSent || res.destroyed) return;
  a.headers['content-length'] = String(Buffer.byteLength(a.body));
  res.writeHead(a.status, a.headers);
  res.end(a.body);
}

/** Whole answers decided in this turn of the event loop, written when its reads are done. */
const held: Array<[ServerResponse, Whole]> = [];
/** Whether a turn-end write of `held` is asked for. */
let writeAsked = false;

/**
 * The most whole answers held at once: when that many wait, they are written at once. Every
 * request held keeps its request and response alive, and a turn under a flood reads hundreds:
 * those a young-generation collection finds still held were copied, and those found twice
 * promoted to the old generation — ~0.55 MB per collection, against ~0.1 MB with at most 32
 * held (bench/RESULTS.md, "Held answers in groups of 32").
 */
const MOST_HELD = 32;

function writeHeld(): void {
  for (const [res, a] of held) writeWhole(res, a);
  held.length = 0;
}

/**
 * `writeWhole` at the end of this turn of the loop (`atTurnEnd`), together with every other
 * answer decided in it — or, when MOST_HELD are waiting, at once with those. Under a flood of
 * refusals the loop reads many requests a turn; writing each answer as soon as it was decided
 * put a write syscall between every two requests read, and answering them together after the
 * reads costs the gateway ~15% less CPU per refusal (bench/RESULTS.md, "Whole answers at the
 * end of the loop's turn"). An answer waits at most one turn, and a connection's answers keep
 * their order.
 */
export function writeAtTurnEnd(res: ServerResponse, a: Whole): void {
  if (held.push([res, a]) >= MOST_HELD) writeHeld();
  else if (!writeAsked) {
    writeAsked = true;
    atTurnEnd(() => {
      writeAsked = false;
      writeHeld();
    });
  }
}

/**
 * Resolves once the whole answers held now are written (at once when none is): a gateway closing
 * its connections waits for it, so a request that ended in this turn still gets its answer.
 */
export function heldAnswersWritten(): Promise<void> {
  if (held.length === 0) return Promise.resolve();
  // Turn-end callbacks run in the order they were asked for: after `writeHeld`.
  return new Promise((resolve) => atTurnEnd(resolve));
}

/** `a` with `headers` added, when it is whole (a stream's head went out with its own). */
export function told(a: Answer, headers: Readonly<Record<string, string>>): Answer {
  if (isWhole(a)) Object.assign(a.headers, headers);
  return a;
}

/**
 * The headers that name an answer's request: Goodput's own, and `x-request-id`, which OpenAI's
 * SDKs read as the request's id (`_request_id`, `APIError.requestID`), so that a client's logs
 * hold the id its decision record is found by.
 */
export function idHeaders(id: string): { 'x-goodput-request-id': string; 'x-request-id': string } {
  return { 'x-goodput-request-id': id, 'x-request-id': id };
}

/** Every answer names its request, so its decision record can be looked up. */
export function named(a: Whole, id: string, extra?: Record<string, string>): Whole {
  if (extra !== undefined) Object.assign(a.headers, extra);
  a.headers['x-goodput-request-id'] = id;
  a.headers['x-request-id'] = id;
  return a;
}
