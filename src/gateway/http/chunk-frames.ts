/**
 * A streamed answer's HTTP/1.1 chunks, framed by the gateway: each write is one buffer, the
 * chunk's size in hex, CRLF, its bytes, CRLF (RFC 9112 §7.1), and one write request on the
 * socket. Node's own framing queues four a write (the size, CRLF, the bytes, CRLF), so a token
 * costs the socket's write machinery four times over, and the syscall that sends the turn's
 * writes gets a string to convert among them.
 *
 * Node decides the framing when the head is written: chunked for an HTTP/1.1 client with no
 * Content-Length, plain for HTTP/1.0 (the connection then ends the body). Taken over only where
 * Node chose chunked; the head Node wrote stays as it is, and so does keep-alive.
 */
import type { ServerResponse } from 'node:http';

/** The zero-size chunk that ends a chunked body (no trailers). */
const LAST_CHUNK = Buffer.from('0\r\n\r\n', 'latin1');

export interface ChunkWriter {
  /** Writes `bytes` as one chunk; false when the socket asks to wait (Node's `write`). */
  write(bytes: Uint8Array): boolean;
  /** Ends the body, with the last chunk when the body is chunked. */
  end(): void;
}

/** Call after the head is written (`writeHead`): Node's choice of framing is known then. */
export function chunkWriter(res: ServerResponse): ChunkWriter {
  if (!res.chunkedEncoding) {
    return { write: (bytes) => res.write(bytes), end: () => res.end() };
  }
  res.chunkedEncoding = false;
  return {
    // An empty chunk would end the body: there is nothing to send.
    write: (bytes) => bytes.length === 0 || res.write(frame(bytes)),
    end: () => res.end(LAST_CHUNK),
  };
}

/** One chunk: a buffer from Node's pool for a token's few hundred bytes, so nothing of its own. */
export function frame(bytes: Uint8Array): Buffer {
  const size = bytes.length.toString(16);
  const out = Buffer.allocUnsafe(size.length + bytes.length + 4);
  let at = out.write(size, 0, 'latin1');
  out[at++] = 0x0d;
  out[at++] = 0x0a;
  out.set(bytes, at);
  at += bytes.length;
  out[at++] = 0x0d;
  out[at] = 0x0a;
  return out;
}
