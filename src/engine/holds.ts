/**
 * Seats in the batch (`maxNumSeqs`) go to sequences that are scheduled. A sequence in the batch
 * that is not — paused for a tool call with its KV kept, or held — gives its seat; a held one
 * keeps its KV and takes a seat back when one frees, before any waiting sequence (unless, under
 * priority scheduling, the request admission would take next outranks it). Under priority
 * scheduling a waiting request of higher priority takes the seat of the lowest-priority
 * scheduled sequence, which is held (vLLM's compute-only preemption).
 */
import type { EngineRequest } from './engine-types.ts';
import type { Scheduler } from './scheduler.ts';
import { type Seq, SeqState } from './sequence.ts';
import { seatVictim } from './victims.ts';

/**
 * Priority scheduling, before a step is planned: when every seat is taken and the waiting
 * queue's head has a strictly higher priority than the lowest-priority scheduled sequence,
 * that sequence gives its seat and keeps its KV (a compute-only preemption); it takes a seat
 * back when one frees (`unhold`). One per step.
 */
export function holdForWaiting<R extends EngineRequest>(sch: Scheduler<R>): void {
  if (!sch.byPriority || sch.activeRunning < sch.limits.maxNumSeqs) return;
  const head = sch.waiting.peekFront();
  if (head === undefined || head.state === SeqState.Cancelled) return;
  const v = seatVictim(sch.running, head.req.priority ?? 0);
  if (v === undefined) return;
  v.held = true;
  sch.numIdle++;
  sch.stats.preemptions++;
  sch.stats.preemptionsKeep++;
  sch.events.record('keep', v);
}

/**
 * Held sequences take free seats back in batch order, before any waiting sequence — under
 * priority scheduling, unless the request admission would take next (a TTFT boost included)
 * has a higher priority than theirs. Planning does this before it schedules the batch,
 * admission before it admits.
 */
export function unhold<R extends EngineRequest>(sch: Scheduler<R>, maxSeqs: number): void {
  if (sch.numIdle === 0) return;
  // The request admission would take next, a TTFT boost included (a cancelled one is gone).
  let head = sch.waiting.peekFront(sch.boosted);
  while (head?.state === SeqState.Cancelled) {
    sch.waiting.popFront();
    head = sch.waiting.peekFront(sch.boosted);
  }
  const headPriority = head === undefined || !sch.byPriority ? Infinity : (head.req.priority ?? 0);
  for (const v of sch.running) {
    if (sch.activeRunning >= maxSeqs) return;
    if (!v.held) continue;
    if ((v.req.priority ?? 0) > headPriority) return;
    v.held = false;
    sch.numIdle--;
  }
}

/**
 * A sequence paused for a tool call with its KV kept resumes: scheduled again if a seat is
 * free, else held — in the batch with its KV, unscheduled — until one is (`unhold`): its seat
 * may have gone to a waiting sequence while it was paused.
 */
export function resumeKept<R extends EngineRequest>(sch: Scheduler<R>, v: Seq<R>): void {
  if (sch.activeRunning < sch.limits.maxNumSeqs) sch.numIdle--;
  else v.held = true;
}
