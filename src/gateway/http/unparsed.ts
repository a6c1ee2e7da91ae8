/**
 * The answer to a request Node could not parse into one (Node's `clientError`): a head over
 * Node's size limit is a 431, anything else malformed a 400, both in OpenAI's error shape and
 * closing the connection — where Node's default is a bare status line. A socket that already
 * broke (the client went away) gets nothing.
 */
import type { Duplex } from 'node:stream';
import { OpenAiError } from '../../openai/index.ts';

export function answerUnparsed(e: NodeJS.ErrnoException, socket: Duplex): void {
  if (e.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const tooLarge = e.code === 'HPE_HEADER_OVERFLOW';
  const status = tooLarge ? 431 : 400;
  const error = tooLarge
    ? new OpenAiError(
        431,
        'request headers: expected at most 16 KiB in all, got more',
        null,
        'header_too_large',
      )
    : new OpenAiError(400, 'the request is not valid HTTP', null, 'bad_request');
  const body = JSON.stringify(error.body());
  socket.end(
    `HTTP/1.1 ${status} ${tooLarge ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n` +
      'content-type: application/json\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      'connection: close\r\n\r\n' +
      body,
  );
}
