/** An upstream's whole body, read within bounds of size and time (http-backend.ts). */
import type { IncomingMessage } from 'node:http';
import type { Clock } from '../core/ports/clock.ts';
import type { Timers } from '../core/ports/timers.ts';
import type { Ms } from '../core/request/units.ts';

/**
 * A body as text, at most `maxBytes` of it and within `withinMs` of now: one that trickles on,
 * or runs long, is cut (the read fails; for an error body, what was read is enough). Read as
 * bytes, like token streams: Node's stream code stays on one shape.
 */
export async function readText(
  res: IncomingMessage,
  maxBytes: number,
  withinMs: Ms,
  at: { readonly clock: Clock; readonly timers: Timers },
): Promise<string> {
  const pieces: Buffer[] = [];
  let bytes = 0;
  const overdue = at.timers.at(at.clock.now() + withinMs, () =>
    res.destroy(new Error(`the body took longer than ${withinMs} ms`)),
  );
  try {
    for await (const piece of res) {
      pieces.push(piece as Buffer);
      bytes += (piece as Buffer).length;
      if (bytes > maxBytes) res.destroy(new Error(`the body ran past ${maxBytes} bytes`));
    }
  } finally {
    overdue.cancel();
  }
  return Buffer.concat(pieces).toString('utf8');
}
