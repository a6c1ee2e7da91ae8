/**
 * The gateway's decision log (`goodput serve --decisions FILE`): every decision record as one
 * JSON line, written by pino through an asynchronous destination, so a slow disk never holds a
 * request. A line is the record's own keys with pino's envelope around them: `level`, `time`
 * (Unix ms), `pid`, `hostname` and `msg: "decision"`. A log pipeline takes it as it is, and a
 * replay reads the record's keys.
 */
import { openSync } from 'node:fs';
import { pino } from 'pino';
import type { DecisionRecord } from '../core/observe/decision-record.ts';

export interface DecisionLog {
  write(record: DecisionRecord): void;
  /** Writes out what is still buffered, then closes the file. */
  close(): Promise<void>;
}

/**
 * Opens `path` for appending (a restart keeps the earlier lines), here and now: a path that
 * cannot be written throws at start, not mid-run.
 */
export function openDecisionLog(path: string, onError: (e: Error) => void): DecisionLog {
  const destination = pino.destination({ dest: openSync(path, 'a'), sync: false });
  // A write that fails later (a full disk) loses log lines, never requests: told once, and the
  // gateway serves on.
  let failed = false;
  destination.on('error', (e: Error) => {
    if (!failed) onError(e);
    failed = true;
  });
  const logger = pino({}, destination);
  return {
    write: (record) => {
      if (!failed) logger.info(record, 'decision');
    },
    close: () =>
      new Promise((resolve) => {
        if (failed) {
          destination.destroy();
          return resolve();
        }
        destination.once('close', () => resolve());
        destination.once('error', () => resolve());
        destination.end();
      }),
  };
}
