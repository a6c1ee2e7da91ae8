/**
 * The gateway's Node request listener: the two completion endpoints are handled on Node's own
 * request and response — no web Request, Headers, AbortController or Response on the path every
 * request takes, so a refusal under overload costs little more than Node's HTTP itself — and
 * every other route goes to the Hono app through @hono/node-server. A completion's whole answer
 * is written as one head and one body, at the end of the loop's turn with the others decided in
 * it; a stream was already written by the handler.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import type { Hono } from 'hono';
import { serverError } from '../../openai/index.ts';
import type { OpsLog } from '../ops-log.ts';
import { errorWhole, isWhole, writeAtTurnEnd, type Whole } from './answer.ts';
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
  const rest = getRequestListener(app.fetch);
  return (req, res) => {
    // Streams' tokens held in this turn go out before another request is taken up, if late.
    TURN_WRITES.flushIfLate();
    // A connection's first request makes room for the next connection waiting to be read.
    const queuedSinceMs = deps.intake?.seen(req.socket);
    const kind = req.method === 'POST' ? COMPLETION_PATHS[req.url ?? ''] : undefined;
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
      (e: unknown) => {
        // A bug: logged under an id the answer carries, so the two can be matched.
        const id = deps.newId();
        deps.log.error({ err: e, request_id: id }, 'unexpected error');
        const answer = errorWhole(serverError('internal error'), { 'x-goodput-request-id': id });
        writeAtTurnEnd(res, closingIfUnread(req, answer, deps));
      },
    );
  };
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
