/**
 * A completion request as its handler reads it, whichever server carries it: its headers, its
 * body (read once and bounded: read-body.ts), and a signal that aborts when its client goes
 * away. Two adapters: a Web-standard `Request` (Hono in-process, `app.request`), and Node's own
 * request and response — the gateway's hot path, which builds no web Request, no web Headers
 * and no AbortController until something needs one (a refusal at the door needs none).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody, readNodeBody } from './read-body.ts';

export interface Inbound {
  /** A header's value (lowercase name); repeated headers joined with ", ". */
  header(name: string): string | null;
  /** The body as text: a 413 past `limitBytes`, a 400 when not UTF-8, stopped if the client left. */
  body(limitBytes: number): Promise<string>;
  /** Aborted (with the client gone) when the client goes away; made on first use. */
  readonly signal: AbortSignal;
  /** The body will not be read: let it go by. */
  discard(): void;
}

export function webInbound(raw: Request): Inbound {
  return {
    header: (name) => raw.headers.get(name),
    body: (limitBytes) => readBody(raw, limitBytes),
    get signal() {
      return raw.signal;
    },
    discard: () => void raw.body?.cancel().catch(() => {}),
  };
}

export function nodeInbound(req: IncomingMessage, res: ServerResponse): Inbound {
  let gone: AbortController | undefined;
  return {
    header(name) {
      const v = req.headers[name];
      return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
    },
    body: (limitBytes) => readNodeBody(req, limitBytes),
    get signal() {
      if (gone === undefined) {
        const g = (gone = new AbortController());
        // The response closing before it finished: the client went away.
        if (res.destroyed) g.abort();
        else res.once('close', () => res.writableFinished || g.abort());
      }
      return gone.signal;
    },
    discard: () => void req.resume(),
  };
}
