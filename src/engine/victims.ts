/**
 * Which running sequence gives its KV back when another cannot grow. vLLM takes the back of the
 * running list: the most recently admitted (under priority scheduling, the lowest priority,
 * newest first). Goodput's `slack` choice (an engine policy, not a vLLM option) takes, among the
 * lowest priority present, the one whose objectives a stall costs least — the most slack, ties
 * to the newest:
 *
 * - before its first token, the time left to its first-token deadline;
 * - once streaming with a token-gap objective, that objective: a stall of a recompute or a swap
 *   breaks its gap at once, so a stream of an 80 ms class has 80 ms;
 * - with a completion deadline, the time left once its remaining tokens are decoded at the
 *   current step time;
 * - with none of these (best effort), unbounded.
 *
 * Under FCFS every sequence counts as one priority, so slack alone decides: a request still
 * waiting for its first token, seconds from its deadline, goes before a stream whose next gap
 * is due in milliseconds — where newest-first takes whichever was admitted last.
 *
 * Before either, a sequence idle in the batch (paused for a tool call, or held) gives its KV
 * first; and under priority scheduling a waiting request of higher priority takes the seat of
 * the lowest-priority scheduled sequence, which keeps its KV (`seatVictim`).
 */
import type { Ms } from '../core/request/units.ts';
import type { EngineRequest } from './engine-types.ts';
import type { Seq } from './sequence.ts';

/** How long `s` can be stalled at `nowMs` before one of its objectives is missed. */
export function slackOf(s: Seq<EngineRequest>, nowMs: Ms, decodeStepMs: () => Ms): Ms {
  const r = s.req;
  let slack = Infinity;
  if (s.emitted === 0) {
    if (r.ttftDeadlineMs !== undefined) slack = r.ttftDeadlineMs - nowMs;
  } else if (r.itlSloMs !== undefined) {
    slack = r.itlSloMs;
  }
  if (r.e2eDeadlineMs !== undefined) {
    const left = r.e2eDeadlineMs - nowMs - (s.output - s.emitted) * decodeStepMs();
    if (left < slack) slack = left;
  }
  return slack;
}

/**
 * The index in `running` of the victim among `running[from..]` (those not yet in the step being
 * planned): the lowest priority present when `byPriority`, then the most slack, then the newest.
 */
export function slackVictim(
  running: readonly Seq<EngineRequest>[],
  from: number,
  byPriority: boolean,
  nowMs: Ms,
  decodeStepMs: () => Ms,
): number {
  let best = running.length - 1;
  let bestPriority = -Infinity;
  let bestSlack = -Infinity;
  for (let j = running.length - 1; j >= from; j--) {
    const s = running[j];
    const priority = byPriority ? (s.req.priority ?? 0) : 0;
    if (priority < bestPriority) continue;
    const slack = slackOf(s, nowMs, decodeStepMs);
    // Strictly more: a tie keeps the newer, found first from the back.
    if (priority > bestPriority || slack > bestSlack) {
      best = j;
      bestPriority = priority;
      bestSlack = slack;
    }
  }
  return best;
}

/** The last running sequence after `i` that is paused for a tool call or held, or −1. */
export function idleFromBack(running: readonly Seq<EngineRequest>[], i: number): number {
  for (let j = running.length - 1; j > i; j--) {
    if (running[j].paused || running[j].held) return j;
  }
  return -1;
}

/**
 * Priority scheduling: the scheduled sequence that gives its seat to a waiting request of
 * `priority` — the lowest-priority one, newest first, if strictly lower; else none. Running
 * sequences are kept in priority order, so it is the last one not idle.
 */
export function seatVictim<S extends Seq<EngineRequest>>(
  running: readonly S[],
  priority: number,
): S | undefined {
  for (let j = running.length - 1; j >= 0; j--) {
    const v = running[j];
    if (v.paused || v.held) continue;
    return (v.req.priority ?? 0) > priority ? v : undefined;
  }
  return undefined;
}
