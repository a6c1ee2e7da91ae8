/**
 * The waiting queue's half of planning a step: admitting sequences from its front into the
 * running batch — after the running ones are served under chunked prefill (vLLM V1), before
 * them in V0's prefill-first steps. The head blocks the rest (FIFO per priority level, a near
 * first-token deadline first), except one whose LoRA adapter would be one too many for the step:
 * it keeps its place and the next may go. A swapped-out sequence comes back by swap-in; any
 * other takes KV through the cache manager, its cached prefix included. When blocks run short, a
 * sequence paused for a tool call gives up its seat and KV before admission stops. The state
 * stays the scheduler's: these are plain functions over it, called once or twice a step.
 */
import type { EngineRequest } from './engine-types.ts';
import type { Scheduler } from './scheduler.ts';
import { type Seq, SeqState } from './sequence.ts';
import { addToShape } from './step-shape.ts';
import { chunkOf, endsPiece } from './pieces.ts';
import { unhold } from './holds.ts';
import type { StepShape } from './timing/profile.ts';

export const ADMIT_ANY = 0;
export const ADMIT_WHOLE_PROMPTS = 1;
export const ADMIT_SWAPPED = 2;
export type AdmitMode = typeof ADMIT_ANY | typeof ADMIT_WHOLE_PROMPTS | typeof ADMIT_SWAPPED;

/**
 * Admits from the front of the waiting queue while budget and seats allow. `mode` restricts
 * what may be admitted: anything (a chunk of the last prompt allowed), whole prompts only
 * (stopping at a swapped-out sequence), or swapped-out sequences only.
 */
export function admit<R extends EngineRequest>(
  sch: Scheduler<R>,
  shape: StepShape,
  budgetIn: number,
  mode: AdmitMode,
): number {
  const { running, waiting, kv } = sch;
  const maxSeqs = sch.limits.maxNumSeqs;
  let budget = budgetIn;
  let admitted = 0;
  unhold(sch, maxSeqs);
  const lora = sch.lora;
  if (lora !== null) lora.beginStep(scheduledAdapters(running));
  while (budget > 0) {
    const s = waiting.peekFront(sch.boosted);
    if (s === undefined) break;
    // Seats go to sequences that are scheduled (see `holdForWaiting`).
    if (sch.activeRunning >= maxSeqs) break;
    if (s.state === SeqState.Cancelled) {
      waiting.popFront();
      continue;
    }
    // Its adapter would be one too many in this step's batch: it waits, the next may go.
    if (lora !== null && !lora.admits(s.req.adapter)) {
      waiting.popFront();
      sch.skipped.push(s);
      continue;
    }
    let tokens: number;
    if (s.state === SeqState.Swapped) {
      if (mode === ADMIT_WHOLE_PROMPTS) break;
      tokens = s.prefilling ? chunkOf(s, budget, sch.chunkCap) : 1;
      const moved = s.hostBlocks;
      if (!kv.swapIn(s, s.computed + tokens)) {
        if (releaseIdle(sch, s)) continue;
        break;
      }
      sch.swapBlocks += moved;
      sch.stats.swapTransferBlocks += moved;
    } else {
      if (mode === ADMIT_SWAPPED) break;
      const whole = mode === ADMIT_WHOLE_PROMPTS;
      // V0 counts a whole prompt against the budget, cached prefix included; one longer than
      // the whole budget (a recompute of a long sequence) still runs, alone in its step.
      if (whole && s.target > budget && admitted > 0) break;
      tokens = kv.admit(
        s,
        whole ? s.target : Math.min(budget, sch.chunkCap, s.req.pieceTokens ?? Infinity),
      );
      if (tokens === 0) {
        if (releaseIdle(sch, s)) continue;
        break;
      }
      if (sch.limits.prefixCachedOnAllocation === true && s.cacheNext < s.cacheLimit)
        kv.commit(s, s.computed + tokens);
      sch.pendingPrefill -= s.computed;
      sch.stats.promptTokens += s.target - s.loadedTokens;
      if (s.loadedTokens === 0) sch.stats.prefixHitTokens += s.cachedTokens;
      sch.stats.kvLoadedTokens += s.loadedTokens;
      sch.events.record('prefill', s);
      if (whole) budget -= s.cachedTokens;
    }
    waiting.popFront();
    sch.numWaiting--;
    sch.numRunning++;
    s.state = SeqState.Running;
    addRunning(sch, s);
    lora?.take(s.req.adapter);
    s.sched = tokens;
    if (s.prefilling) endsPiece(s, tokens);
    budget -= tokens;
    admitted++;
    addToShape(shape, s, tokens);
  }
  // Those passed over for their adapter keep their places at the front.
  const skipped = sch.skipped;
  for (let i = skipped.length - 1; i >= 0; i--) waiting.pushFront(skipped[i]);
  skipped.length = 0;
  return admitted;
}

/** The adapters of the running sequences scheduled in the step being planned. */
function* scheduledAdapters(running: readonly Seq<EngineRequest>[]): Generator<string | undefined> {
  for (const s of running) if (!s.paused && !s.held) yield s.req.adapter;
}

/**
 * Running sequences stay in admission order; under priority scheduling, in priority order
 * first, so the back — where victims are taken — holds the lowest priority, newest first.
 */
function addRunning<R extends EngineRequest>(sch: Scheduler<R>, s: Seq<R>): void {
  const running = sch.running;
  if (!sch.byPriority) {
    running.push(s);
    return;
  }
  const p = s.req.priority ?? 0;
  let i = running.length;
  while (i > 0 && (running[i - 1].req.priority ?? 0) > p) i--;
  running.splice(i, 0, s);
}

/**
 * Frees the KV of the last idle sequence in the batch that may give it up, so the waiting `head`
 * can be admitted: one paused for a tool call is swapped or dropped, whichever is cheaper (it
 * resumes when its call returns); under priority scheduling, one held for a higher priority than
 * its own is preempted (back to the waiting queue, as vLLM preempts for a higher-priority
 * request). A held sequence otherwise keeps its KV: it takes the next free seat. False when none
 * may.
 */
function releaseIdle<R extends EngineRequest>(sch: Scheduler<R>, head: Seq<R>): boolean {
  const running = sch.running;
  for (let j = running.length - 1; j >= 0; j--) {
    const v = running[j];
    if (v.paused) {
      sch.release(v, sch.costs.swapIsCheaper(v));
      return true;
    }
    if (v.held && sch.byPriority && (head.req.priority ?? 0) < (v.req.priority ?? 0)) {
      sch.preemptHeld(v);
      return true;
    }
  }
  return false;
}
