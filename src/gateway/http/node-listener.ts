/**
 * The gateway's Node request listener: the two completion endpoints are handled on Node's own
 * request and response — no web Request, Headers, AbortController or Response on the path every
 * request takes, so a refusal under overload costs little more than Node's HTTP itself — and
 * every other route goes to the Hono app through @hono/node-server. A completion's whole answer
 * is written as one head and one body, at the end of the loop's turn with the others decided in
 * it; a stream was already written by the handler.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestError, getRequestListener } from '@hono/node-server';
import type { Hono } from 'hono';
import { OpenAiError, serverError } from '../../openai/index.ts';
import type { OpsLog } from '../ops-log.ts';
import type { Endpoint } from '../backend.ts';
import {
  errorWhole,
  idHeaders,
  isWhole,
  toResponse,
  writeAtTurnEnd,
  type Whole,
} from './answer.ts';
import type { GatewayEnv } from './app.ts';
import { COMPLETION_PATHS, handleCompletion, type CompletionsDeps } from './completions.ts';
import { continueIfExpected, nodeInbound } from './inbound.ts';
import { declaredBytes } from './read-body.ts';
import type { ConnectionIntake } from './connection-intake.ts';
import { TURN_WRITES } from './turn-writes.ts';

export function nodeListener(
  app: Hono<GatewayEnv>,
  deps: CompletionsDeps & { readonly log: OpsLog; readonly intake?: ConnectionIntake },
): (req: IncomingMessage, res: ServerResponse) => void {
  const rest = getRequestListener(app.fetch, {
    // An HTTP/1.0 request may leave out Host; the routes do not read it.
    hostname: 'localhost',
    // A request target no URL can be made of (`OPTIONS *`, a backslash in the path): refused as
    // any unreadable request, where the adapter's own answer is a bare 400.
    errorHandler: (e) => {
      if (e instanceof RequestError) {
        const why = `the request target is not valid: ${e.message}`;
        return toResponse(refusedUnread(new OpenAiError(400, why, null), deps));
      }
      return toResponse(bugAnswer(e, deps));
    },
  });
  return (req, res) => {
    // Streams' tokens held in this turn go out before another request is taken up, if late.
    TURN_WRITES.flushIfLate();
    // A connection's first request makes room for the next connection waiting to be read.
    const queuedSinceMs = deps.intake?.seen(req.socket);
    const head = req.headers;
    const kind = req.method === 'POST' ? completionKind(req.url) : undefined;
    if (head.host === undefined || head.expect !== undefined) {
      const refused = unacceptableHead(req, deps);
      if (refused !== undefined) {
        // Asked of a completion endpoint, it is one of its requests and answers, as a 413 is.
        if (kind !== undefined) counted(kind, refused, deps);
        writeAtTurnEnd(res, closingIfUnread(req, refused, deps));
        return;
      }
    }
    if (kind === undefined) {
      // Hono reads what it needs of a body: a client waiting to send one goes on at once.
      continueIfExpected(req, res);
      void rest(req, res);
      return;
    }
    handleCompletion(kind, nodeInbound(req, res, queuedSinceMs), deps, res).then(
      (answer) => {
        if (isWhole(answer)) writeAtTurnEnd(res, closingIfUnread(req, answer, deps));
      },
      (e: unknown) => writeAtTurnEnd(res, closingIfUnread(req, bugAnswer(e, deps), deps)),
    );
  };
}

/** The completion API a request's target names, its query string aside (the routes read none). */
function completionKind(target = ''): Endpoint | undefined {
  const q = target.indexOf('?');
  const path = q < 0 ? target : target.slice(0, q);
  return Object.hasOwn(COMPLETION_PATHS, path) ? COMPLETION_PATHS[path] : undefined;
}

/**
 * A head Node parsed but HTTP does not allow, refused as any unreadable request (counted, with a
 * decision record under the id it carries) where Node's default is a bare status line: an
 * HTTP/1.1 request without `Host` (a 400, RFC 9112 §3.2), and an `Expect` other than
 * `100-continue` (a 417, RFC 9110 §10.1.1). Undefined: the head is fine.
 */
function unacceptableHead(req: IncomingMessage, deps: CompletionsDeps): Whole | undefined {
  const { host, expect } = req.headers;
  let e: OpenAiError;
  if (host === undefined && req.httpVersion === '1.1') {
    e = new OpenAiError(400, 'host: expected a Host header (HTTP/1.1), got none', null);
  } else if (expect !== undefined && expect.toLowerCase() !== '100-continue') {
    e = new OpenAiError(
      417,
      `expect: expected 100-continue or no Expect header, got ${JSON.stringify(expect.slice(0, 80))}`,
      null,
      'expectation_failed',
    );
  } else return undefined;
  return refusedUnread(e, deps);
}

/** A completion endpoint's request and its answer, counted where its handler would count them. */
function counted(endpoint: Endpoint, answer: Whole, deps: CompletionsDeps): void {
  deps.metrics.apiRequests.inc({ endpoint });
  deps.metrics.apiAnswers.inc({ endpoint, status: String(answer.status) });
}

/** A bug: a 500, logged under an id the answer carries, so the two can be matched. */
function bugAnswer(e: unknown, deps: CompletionsDeps & { readonly log: OpsLog }): Whole {
  const id = deps.newId();
  deps.log.error({ err: e, request_id: id }, 'unexpected error');
  return errorWhole(serverError('internal error'), idHeaders(id));
}

/** Refused before it could be read as a request: counted, recorded under the id it carries. */
function refusedUnread(e: OpenAiError, deps: CompletionsDeps): Whole {
  const id = deps.newId();
  const reason = 'invalid_request';
  deps.gateway.refuseUnread({ requestId: id, tenant: null, cls: null, reason, status: e.status });
  return errorWhole(e, { ...idHeaders(id), 'x-goodput-reason': reason });
}

/**
 * The most of a body answered before it arrived (refused unread, or over the limit) that is
 * let go by to keep the connection: what Go's HTTP server reads for the same.
 */
const DRAINED_BODY_BYTES = 256 * 1024;

/** How long a closing connection still reads (and drops) what its client sends: see below. */
const LINGER_MS = 2_000;

/**
 * An answer given before the request's body arrived keeps the connection only when what is left
 * is small: Node would otherwise read and drop a 413's gigabytes, or a chunked body that never
 * ends, for as long as the client sends. Otherwise it says `Connection: close`, and the socket
 * closes as nginx's lingering close does: its side is shut at once, what the client still sends
 * is read and dropped for up to LINGER_MS, then it goes — so a client still uploading reads its
 * answer rather than a reset.
 */
function closingIfUnread(
  req: IncomingMessage,
  answer: Whole,
  at: Pick<CompletionsDeps, 'timers' | 'nowMs'>,
): Whole {
  // A chunked body that is not whole may never end.
  if (req.complete || (declaredBytes(req) ?? Infinity) <= DRAINED_BODY_BYTES) return answer;
  answer.headers.connection = 'close';
  const socket = req.socket;
  // Node closes a `Connection: close` response's socket with `destroySoon()`, which resets a
  // client still sending; this one shuts its side and lingers.
  socket.destroySoon = () => {
    socket.end();
    const gone = at.timers.at(at.nowMs() + LINGER_MS, () => socket.destroy());
    socket.once('close', () => gone.cancel());
  };
  return answer;
}
