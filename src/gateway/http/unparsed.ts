/**
 * The answer to a request Node could not parse into one (Node's `clientError`): a head over
 * Node's size limit is a 431, a request that did not arrive within Node's header or request
 * timeout a 408, anything else malformed a 400 saying what the parser met, all in OpenAI's
 * error shape and closing the connection — where Node's default is a bare status line. A socket
 * that already broke (the client went away) gets nothing. Returns the error's code, to count the
 * request by (`goodput_invalid_requests_total`).
 */
import type { Duplex } from 'node:stream';
import { OpenAiError } from '../../openai/index.ts';

export function answerUnparsed(e: NodeJS.ErrnoException, socket: Duplex): string | undefined {
  if (e.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return undefined;
  }
  const [status, text, error] = unparsedError(e);
  const body = JSON.stringify(error.body());
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\n` +
      'content-type: application/json\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      'connection: close\r\n\r\n' +
      body,
  );
  return error.code ?? undefined;
}

/** The status, its text and the error for what Node could not take. */
function unparsedError(
  e: NodeJS.ErrnoException & { reason?: string },
): [number, string, OpenAiError] {
  switch (e.code) {
    case 'HPE_HEADER_OVERFLOW':
      return [
        431,
        'Request Header Fields Too Large',
        new OpenAiError(
          431,
          'request headers: expected at most 16 KiB in all, got more',
          null,
          'header_too_large',
        ),
      ];
    // Node's headersTimeout or requestTimeout: the client sent too slowly, or stopped.
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [
        408,
        'Request Timeout',
        new OpenAiError(408, 'the request did not arrive in time', null, 'request_timeout'),
      ];
    default: {
      // llhttp says what it met ("Invalid method encountered", "Transfer-Encoding can't be
      // present with Content-Length", …); its code names the rule.
      const why = e.reason === undefined ? '' : `: ${e.reason}${e.code ? ` (${e.code})` : ''}`;
      return [
        400,
        'Bad Request',
        new OpenAiError(400, `the request is not valid HTTP${why}`, null, 'bad_request'),
      ];
    }
  }
}
