/**
 * A completion request as its handler reads it, whichever server carries it: its headers, its
 * body (read once and bounded: read-body.ts), and a signal that aborts when its client goes
 * away. Two adapters: a Web-standard `Request` (Hono in-process, `app.request`), and Node's own
 * request and response — the gateway's hot path, which builds no web Request, no web Headers
 * and no AbortController until something needs one (a refusal at the door needs none).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Ms } from '../../core/request/units.ts';
import { readBody, readNodeBody, type GiveUp } from './read-body.ts';

export interface Inbound {
  /** A header's value (lowercase name); repeated headers joined with ", ". */
  header(name: string): string | null;
  /**
   * The body as text: a 413 past `limitBytes`, a 400 when not UTF-8, stopped if the client left,
   * `UploadOverdue` if it is still uploading at `giveUp`.
   */
  body(limitBytes: number, giveUp?: GiveUp): Promise<string>;
  /** Aborted (with the client gone) when the client goes away; made on first use. */
  readonly signal: AbortSignal;
  /** Whether its client has gone away already: asked without making the signal. */
  readonly gone: boolean;
  /** The body will not be read: let it go by. */
  discard(): void;
  /**
   * When its connection began to wait to be let in (connection-intake.ts): its client's wait
   * started then. Undefined when it did not wait.
   */
  readonly queuedSinceMs?: Ms;
}

// Both adapters are classes, not object literals with a `get signal()`: V8 allocates a
// literal's accessor pair in the old generation, and the getter's closure, with all it captures
// (the request, its response, its socket's buffers), then survives every young-generation
// collection until the next full one. Per request under a flood of refusals that doubled the
// collector's work (bench/RESULTS.md).

export function webInbound(raw: Request): Inbound {
  return new WebInbound(raw);
}

export function nodeInbound(
  req: IncomingMessage,
  res: ServerResponse,
  queuedSinceMs?: Ms,
): Inbound {
  return new NodeInbound(req, res, queuedSinceMs);
}

class WebInbound implements Inbound {
  readonly #raw: Request;

  constructor(raw: Request) {
    this.#raw = raw;
  }

  /** A field, not a method: handlers pass it on as a function. */
  readonly header = (name: string): string | null => this.#raw.headers.get(name);

  body(limitBytes: number, giveUp?: GiveUp): Promise<string> {
    return readBody(this.#raw, limitBytes, giveUp);
  }

  get signal(): AbortSignal {
    return this.#raw.signal;
  }

  get gone(): boolean {
    return this.#raw.signal.aborted;
  }

  discard(): void {
    void this.#raw.body?.cancel().catch(() => {});
  }
}

class NodeInbound implements Inbound {
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;
  #gone: AbortController | undefined;
  readonly queuedSinceMs: Ms | undefined;

  constructor(req: IncomingMessage, res: ServerResponse, queuedSinceMs: Ms | undefined) {
    this.#req = req;
    this.#res = res;
    this.queuedSinceMs = queuedSinceMs;
  }

  /**
   * A field, not a method: handlers pass it on as a function. Node keeps only the first of a
   * repeated Authorization; all of them are given, joined, as the web path gives them, so a
   * second credential is refused rather than passed over.
   */
  readonly header = (name: string): string | null => {
    const v = this.#req.headers[name];
    if (v === undefined) return null;
    if (Array.isArray(v)) return v.join(', ');
    return name === 'authorization' ? allOf(this.#req.rawHeaders, name, v) : v;
  };

  body(limitBytes: number, giveUp?: GiveUp): Promise<string> {
    return readNodeBody(this.#req, limitBytes, giveUp, this.#continue);
  }

  /** A body refused before it is read (too large, a deadline out of reach, shed) is never asked for. */
  readonly #continue = (): void => continueIfExpected(this.#req, this.#res);

  get signal(): AbortSignal {
    if (this.#gone === undefined) {
      const g = (this.#gone = new AbortController());
      const res = this.#res;
      // The response closing before it finished: the client went away.
      if (res.destroyed) g.abort();
      else res.once('close', () => res.writableFinished || g.abort());
    }
    return this.#gone.signal;
  }

  get gone(): boolean {
    return this.#gone?.signal.aborted ?? (this.#res.destroyed && !this.#res.writableFinished);
  }

  discard(): void {
    this.#req.resume();
  }
}

/**
 * `Expect: 100-continue`: the gateway's server hands such a request to its listener without
 * answering 100 (serve.ts), so the client is told to send its body here, when it is to be read.
 */
export function continueIfExpected(req: IncomingMessage, res: ServerResponse): void {
  if (req.headers.expect?.toLowerCase() === '100-continue' && !res.headersSent) {
    res.writeContinue();
  }
}

/** Every value of header `name` (lowercase) in `raw`, joined; `first` when it came once. */
function allOf(raw: readonly string[], name: string, first: string): string {
  let all: string[] | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].length !== name.length || raw[i].toLowerCase() !== name) continue;
    (all ??= []).push(raw[i + 1]);
  }
  return all === undefined || all.length < 2 ? first : all.join(', ');
}
