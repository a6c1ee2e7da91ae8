/**
 * Reads a text file line by line, synchronously and in fixed-size chunks, so a trace of any size
 * streams through a bounded buffer (a whole multi-gigabyte trace would not fit in one string).
 * Lines are yielded without their `\n` or `\r\n`; a leading UTF-8 byte-order mark is dropped.
 * The caller counts lines: the n-th value yielded is line n of the file.
 */
import { closeSync, openSync, readSync } from 'node:fs';

const CHUNK_BYTES = 1 << 20;

export function* readLines(path: string): Generator<string> {
  const fd = openSync(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
    const decoder = new TextDecoder('utf-8');
    // The line under way before this chunk, in pieces: joined once when it ends, so a line of
    // hundreds of megabytes costs its length, not its length times its chunks.
    const pieces: string[] = [];
    let first = true;
    for (;;) {
      const n = readSync(fd, buffer, 0, CHUNK_BYTES, null);
      let text = n > 0 ? decoder.decode(buffer.subarray(0, n), { stream: true }) : decoder.decode();
      if (first && text.length > 0) {
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
        first = false;
      }
      let start = 0;
      for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
        const tail = text.slice(start, nl);
        yield stripCr(pieces.length === 0 ? tail : pieces.join('') + tail);
        pieces.length = 0;
        start = nl + 1;
      }
      if (start < text.length) pieces.push(text.slice(start));
      if (n === 0) break;
    }
    if (pieces.length > 0) yield stripCr(pieces.join(''));
  } finally {
    closeSync(fd);
  }
}

function stripCr(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}
