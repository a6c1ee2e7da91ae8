/**
 * Reads a text file line by line, synchronously and in fixed-size chunks, so a trace of any size
 * streams through a bounded buffer (a whole multi-gigabyte trace would not fit in one string).
 * Lines are yielded without their `\n` or `\r\n`; a leading UTF-8 byte-order mark is dropped.
 * The caller counts lines: the n-th value yielded is line n of the file. A line longer than
 * `MAX_LINE_CHARS` is an InputError naming it: no trace's row is, and one string cannot hold a
 * file with no line breaks at all. A file the system will not let it read (permissions, an I/O
 * error) is a ConfigError naming `flag` and the cause.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { ConfigError, InputError } from '../../../core/errors.ts';

const CHUNK_BYTES = 1 << 20;

/** The longest line read: a Mooncake row of a 128K-token prompt is a few kilobytes. */
export const MAX_LINE_CHARS = 16 * (1 << 20);

export function* readLines(path: string, flag = '--trace'): Generator<string> {
  const fd = system(path, flag, () => openSync(path, 'r'));
  let lineNo = 0;
  let held = 0;
  try {
    const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
    const decoder = new TextDecoder('utf-8');
    // The line under way before this chunk, in pieces: joined once when it ends, so a line of
    // hundreds of megabytes costs its length, not its length times its chunks.
    const pieces: string[] = [];
    let first = true;
    for (;;) {
      const n = system(path, flag, () => readSync(fd, buffer, 0, CHUNK_BYTES, null));
      let text = n > 0 ? decoder.decode(buffer.subarray(0, n), { stream: true }) : decoder.decode();
      if (first && text.length > 0) {
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
        first = false;
      }
      let start = 0;
      for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
        const tail = text.slice(start, nl);
        lineNo++;
        if (held + tail.length > MAX_LINE_CHARS) throw tooLong(path, lineNo);
        yield stripCr(pieces.length === 0 ? tail : pieces.join('') + tail);
        pieces.length = 0;
        held = 0;
        start = nl + 1;
      }
      if (start < text.length) {
        pieces.push(text.slice(start));
        held += text.length - start;
        if (held > MAX_LINE_CHARS) throw tooLong(path, lineNo + 1);
      }
      if (n === 0) break;
    }
    if (pieces.length > 0) yield stripCr(pieces.join(''));
  } finally {
    closeSync(fd);
  }
}

function tooLong(path: string, lineNo: number): InputError {
  return new InputError(path, lineNo, 'line', `longer than ${MAX_LINE_CHARS} characters`);
}

/** `read`, a ConfigError naming `flag` and the file where the system refuses it. */
function system<T>(path: string, flag: string, read: () => T): T {
  try {
    return read();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === undefined) throw e;
    throw new ConfigError(flag, `a file this process can read (${code})`, path);
  }
}

function stripCr(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}
