/**
 * Runs `fn` at the end of this turn of Node's event loop: after the I/O callbacks of the poll
 * phase that is running, before the next poll (`setImmediate`). Work that can wait for the
 * turn's reads to be done goes here (http/turn-writes.ts).
 */
export function atTurnEnd(fn: () => void): void {
  setImmediate(fn);
}
