/**
 * The gateway's decision log (`goodput serve --decisions FILE`): every decision record as one
 * JSON line, written through sonic-boom (pino's asynchronous destination), so a slow disk never
 * holds a request. A line is the record's own keys inside pino's envelope: `level`, `time` (Unix
 * ms), `pid` and `hostname` first, `msg: "decision"` last. Each dispatched request's end follows
 * as an outcome record (`core/observe/outcome-record.ts`) with `msg: "outcome"`, found by the same
 * `request_id`. A reload of the policy that put a new revision in force is a line of its own
 * (`msg: "policy_reload"`), between the last record decided under the old revision and the first
 * under the new. A log pipeline takes it as a pino line, and a replay reads the record's keys.
 *
 * The gateway already has each record as JSON text (its decision lookup keeps that), so a line is
 * that text's bytes with the envelope's bytes around them, made into one buffer: not serialised a
 * second time, and never a string the destination must measure and join. Under a flood of
 * refusals, pino's own serialisation and its destination's string mode cost more than the rest of
 * a refusal (bench/RESULTS.md, "The decision log under a flood").
 */
import { fstatSync, openSync, readSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import sonicBoom from 'sonic-boom';

// A CommonJS module: Node's ESM import sees only its default export, which carries the class.
const { SonicBoom } = sonicBoom;

/** The destination in `buffer` mode, where `write` takes bytes (its types know only strings). */
interface ByteSink {
  write(bytes: Buffer): boolean;
  on(event: 'error', listener: (e: Error) => void): unknown;
  once(event: 'close' | 'error', listener: () => void): unknown;
  end(): void;
  destroy(): void;
}

/**
 * A line's `msg`: a decision record, the outcome record of a dispatched request's end, or a
 * policy reload that put a new revision in force (`policy-reloader.ts`).
 */
export type LogLine = 'decision' | 'outcome' | 'policy_reload';

export interface DecisionLog {
  /** `json`: one record as `JSON.stringify` made it (an object: `{…}`, no line break). */
  write(json: string, msg?: LogLine): void;
  /** Writes out what is still buffered, then closes the file. */
  close(): Promise<void>;
}

/** pino's level number for `info`. */
const INFO = 30;
const COMMA = 0x2c;

/**
 * Opens `path` for appending (a restart keeps the earlier lines), here and now: a path that
 * cannot be written throws at start, not mid-run. A file whose last line was cut (a disk that
 * filled, a copy taken mid-write) has that line ended first, so the next record starts a line of
 * its own. `epochMs`: Unix milliseconds now, each line's `time`.
 */
export function openDecisionLog(
  path: string,
  onError: (e: Error) => void,
  epochMs: () => number,
): DecisionLog {
  const fd = openSync(path, 'a+');
  if (endsCut(fd)) writeSync(fd, '\n');
  const destination = new SonicBoom({
    fd,
    sync: false,
    contentMode: 'buffer',
    minLength: 32 * 1024,
    maxWrite: 256 * 1024,
    periodicFlush: 200,
  }) as unknown as ByteSink;
  // Lines go out once 32 KiB wait, and at least every 200 ms: one write per line cost a flood of
  // refusals a system call for every few requests. Closing writes out the rest.
  // A write that fails later (a full disk) loses log lines, never requests: told once, and the
  // gateway serves on.
  let failed = false;
  destination.on('error', (e: Error) => {
    if (!failed) onError(e);
    failed = true;
  });
  const head = Buffer.from(`{"level":${INFO},"time":`);
  const host = Buffer.from(`,"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`);
  const tails: Readonly<Record<LogLine, Buffer>> = {
    decision: Buffer.from('"msg":"decision"}\n'),
    outcome: Buffer.from('"msg":"outcome"}\n'),
    policy_reload: Buffer.from('"msg":"policy_reload"}\n'),
  };
  return {
    write: (json, msg = 'decision') => {
      const tail = tails[msg];
      if (failed) return;
      const time = String(Math.round(epochMs()));
      const jsonBytes = Buffer.byteLength(json);
      const line = Buffer.allocUnsafe(
        head.length + time.length + host.length + jsonBytes + tail.length,
      );
      let at = head.copy(line, 0);
      at += line.write(time, at, 'latin1');
      at += host.copy(line, at);
      // The record's keys follow the envelope's: its `{` becomes a comma, and so does its `}`,
      // before the message.
      line.write(json, at, 'utf8');
      line[at] = COMMA;
      at += jsonBytes;
      line[at - 1] = COMMA;
      tail.copy(line, at);
      destination.write(line);
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

/** Whether the file open at `fd` ends part-way through a line: not empty, no line break last. */
function endsCut(fd: number): boolean {
  const size = fstatSync(fd).size;
  if (size === 0) return false;
  const last = Buffer.alloc(1);
  readSync(fd, last, 0, 1, size - 1);
  return last[0] !== 0x0a;
}
