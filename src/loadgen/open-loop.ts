/**
 * Open-loop load: each request is sent when the workload says, whether or not earlier ones have
 * answered — a slow server does not slow the offered load, as it would with a closed loop of
 * users. `maxConcurrency` (vLLM's `--max-concurrency`) caps requests in flight: one due while
 * the cap is reached waits its turn in arrival order, and its send lag shows it. The pump wakes
 * at each arrival and sends everything due, so a burst of thousands in one instant costs one
 * wake-up, and a generator that falls behind still sends in order and says by how much.
 * Stopped, it sends nothing more and ends once what it sent has ended.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import type { LlmRequest } from '../core/request/request.ts';
import type { CallRecord } from './call-record.ts';

export interface OpenLoopOptions {
  readonly clock: Clock;
  readonly timers: Timers;
  /** Requests in flight at most; undefined: no cap. */
  readonly maxConcurrency?: number;
  /** Called after each request ends, with how many have. */
  readonly onEnd?: (ended: number, record: CallRecord) => void;
  /** Aborted: nothing more is sent, held requests included. */
  readonly stop?: AbortSignal;
}

export interface OpenLoopRun {
  /** Records in the order requests ended. */
  readonly records: readonly CallRecord[];
  /** Clock ms the run started: workload time 0. */
  readonly startMs: number;
  /** Clock ms the last request ended. */
  readonly endMs: number;
}

/** `send` gets each request and the clock ms it was due; it must settle, never reject. */
export function runOpenLoop(
  requests: Iterable<LlmRequest>,
  send: (req: LlmRequest, dueMs: number) => Promise<CallRecord>,
  opts: OpenLoopOptions,
): Promise<OpenLoopRun> {
  const { clock, timers, maxConcurrency = Infinity } = opts;
  const startMs = clock.now();
  const records: CallRecord[] = [];
  const held: LlmRequest[] = [];
  const source = requests[Symbol.iterator]();
  let next = source.next();
  let inFlight = 0;
  let wake: TimerHandle | undefined;

  return new Promise((resolve) => {
    const stopped = () => {
      wake?.cancel();
      next = { done: true, value: undefined };
      held.length = 0;
      settleIfDone();
    };
    const settleIfDone = () => {
      if (next.done && inFlight === 0 && held.length === 0)
        resolve({ records, startMs, endMs: clock.now() });
    };
    const fire = (req: LlmRequest) => {
      inFlight++;
      void send(req, startMs + req.arrivalMs).then((record) => {
        inFlight--;
        records.push(record);
        opts.onEnd?.(records.length, record);
        const waiting = held.shift();
        if (waiting !== undefined) fire(waiting);
        settleIfDone();
      });
    };
    const pump = () => {
      const due = clock.now() - startMs;
      while (!next.done && next.value.arrivalMs <= due) {
        if (inFlight < maxConcurrency) fire(next.value);
        else held.push(next.value);
        next = source.next();
      }
      if (!next.done) wake = timers.at(startMs + next.value.arrivalMs, pump);
      else settleIfDone();
    };
    if (opts.stop?.aborted) return stopped();
    opts.stop?.addEventListener('abort', stopped, { once: true });
    pump();
  });
}
