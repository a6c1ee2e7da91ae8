/**
 * The answer to a request Node could not parse into one (Node's `clientError`): a head over
 * Node's size limit is a 431 — a 414 when the limit ran out in the request line, its target too
 * long — a request that did not arrive within Node's header or request timeout a 408, anything else malformed a 400 saying what the parser met, all in OpenAI's
 * error shape and closing the connection — where Node's default is a bare status line. Each is
 * refused as any unreadable request is (`refuse`: counted, with a decision record under the id it
 * returns), and the answer carries that id and the reason. A socket that already broke (the
 * client went away) gets nothing, and is no request.
 *
 * What could not be parsed may follow a request that could, on the same connection (bytes past a
 * too-short Content-Length, pipelined garbage): that request's answer goes out first, whole, and
 * this one after it, as Node's own default takes care not to cut into an answer under way.
 */
import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { OpenAiError } from '../../openai/index.ts';
import type { RejectReason } from '../../core/request/decision.ts';

/** Counts and records an unreadable request; returns the id its answer carries. */
export type RefuseUnparsed = (status: number, reason: RejectReason) => string;

export function answerUnparsed(
  e: NodeJS.ErrnoException,
  socket: Duplex,
  refuse: RefuseUnparsed,
): void {
  // The client went away; or what broke was the body of a request under way (its client gone
  // mid-upload, or its chunks malformed), whose handler sees the connection close and counts it.
  const under = answerUnderWay(socket);
  if (e.code === 'ECONNRESET' || !socket.writable || (under !== undefined && !under.req.complete)) {
    socket.destroy();
    return;
  }
  answerRaw(socket, ...unparsedError(e), refuse);
}

/** Node's answer in progress on this socket, if any (what its default handler checks too). */
function answerUnderWay(socket: Duplex): ServerResponse | undefined {
  const under = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  return under === null || under?.writableFinished === true ? undefined : under;
}

/** A CONNECT (Node's `connect` event): no route tunnels, so a 405, refused as any other. */
export function answerConnect(socket: Duplex, refuse: RefuseUnparsed): void {
  const e = new OpenAiError(
    405,
    'CONNECT: method not allowed (the gateway is no proxy)',
    null,
    'method_not_allowed',
  );
  answerRaw(socket, 405, 'Method Not Allowed', e, 'method_not_allowed', refuse);
}

/** Writes the refusal on the socket itself, closing it, after any answer Node has under way. */
function answerRaw(
  socket: Duplex,
  status: number,
  text: string,
  error: OpenAiError,
  reason: RejectReason,
  refuse: RefuseUnparsed,
): void {
  const id = refuse(status, reason);
  const body = JSON.stringify(error.body());
  const answer = () =>
    socket.end(
      `HTTP/1.1 ${status} ${text}\r\n` +
        'content-type: application/json\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\n` +
        `x-goodput-request-id: ${id}\r\n` +
        `x-request-id: ${id}\r\n` +
        `x-goodput-reason: ${reason}\r\n` +
        'connection: close\r\n\r\n' +
        body,
    );
  const under = answerUnderWay(socket);
  if (under === undefined) answer();
  else under.once('finish', () => socket.writable && answer());
}

/** The status, its text, the error and the reason it is refused for, for what Node could not take. */
function unparsedError(
  e: NodeJS.ErrnoException & { reason?: string; rawPacket?: unknown },
): [number, string, OpenAiError, RejectReason] {
  switch (e.code) {
    case 'HPE_HEADER_OVERFLOW':
      if (inRequestLine(e.rawPacket)) {
        return [
          414,
          'URI Too Long',
          new OpenAiError(
            414,
            'request target: expected at most 16 KiB, got more',
            null,
            'uri_too_long',
          ),
          'payload_too_large',
        ];
      }
      return [
        431,
        'Request Header Fields Too Large',
        new OpenAiError(
          431,
          'request headers: expected at most 16 KiB in all, got more',
          null,
          'header_too_large',
        ),
        'payload_too_large',
      ];
    // Node's headersTimeout or requestTimeout: the client sent too slowly, or stopped.
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [
        408,
        'Request Timeout',
        new OpenAiError(408, 'the request did not arrive in time', null, 'request_timeout'),
        'invalid_request',
      ];
    default: {
      // llhttp says what it met ("Invalid method encountered", "Transfer-Encoding can't be
      // present with Content-Length", …); its code names the rule.
      const why = e.reason === undefined ? '' : `: ${e.reason}${e.code ? ` (${e.code})` : ''}`;
      return [
        400,
        'Bad Request',
        new OpenAiError(400, `the request is not valid HTTP${why}`, null, 'bad_request'),
        'invalid_request',
      ];
    }
  }
}

/**
 * Whether the head overflowed in its request line: the bytes Node was reading (its last read)
 * begin one, a method and a space, and hold no line end. A request line sent in many small
 * writes overflows in a read that does not begin it: a 431 then.
 */
function inRequestLine(packet: unknown): boolean {
  if (!Buffer.isBuffer(packet)) return false;
  return /^[A-Z]+ /.test(packet.toString('latin1', 0, 24)) && !packet.includes(10);
}
