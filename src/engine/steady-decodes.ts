/**
 * The front of a replica's batch that is only decoding, advanced in one stroke per step. A
 * sequence decoding one token every step changes in a way known in advance: its computed and
 * emitted counts grow by one, a KV block is taken every `blockSize` steps, and its run of tokens
 * (token-runs.ts) grows by one. Planning such a sequence, and applying its token, one by one
 * costs the simulator most of its time once batches are large; here the members cost nothing per
 * step. Each member keeps its counts as of the step it joined (`Seq.steady*`), and its real ones
 * are written back when something needs them (`write`): when it finishes, pauses or fills the
 * ring of step ends (its event, kept in a heap by step), when it is cancelled, and when the
 * group dissolves back into the running list.
 *
 * The members are the running list's head, in admission order — the order vLLM's scheduler
 * walks — so the batch is `members` then `Scheduler.running`, and the group plans first: each
 * member one token, their blocks in one allocation (the same blocks, taken in the same order as
 * one at a time: nothing else happens between them), their attention context as one sum. A
 * step where that is not exactly what planning one by one would do — too few free blocks for
 * the members' new ones (a preemption), a token budget smaller than the group — dissolves the
 * group first (`Scheduler.scheduleRunning`). Only a replica that reports decode tokens in runs,
 * schedules with chunked prefill and FCFS, and has no decode budget, iteration cap, slack
 * victims, multi-step rounds or adapters keeps one (`steadyAllowed`): each of those plans or
 * chooses by what every sequence holds.
 *
 * Numbers: `k` is the number of the next step the members have not taken (the token runs'
 * step numbering). A member that joined before step `k0` with `c` tokens computed has
 * `c − k0 + k` computed before step `k` (`steadyCOff = c − k0`), and takes a block at every step
 * `≡ steadyPhase (mod blockSize)` from `k0` on: it had `room` < blockSize free slots at `k0`,
 * so its first new block is at `k0 + room`, and `steadyPhase = (k0 + room) mod blockSize`.
 */
import type { EngineConfig, EngineRequest } from './engine-types.ts';
import { EngineInvariantError } from './invariant.ts';
import type { KvBlockPool } from './kv-block-pool.ts';
import { NOT_STEADY, type Seq, SeqState } from './sequence.ts';
import type { StepShape } from './timing/profile.ts';
import { reportsAt } from './token-runs.ts';
import { BinaryHeap } from '../core/stats/binary-heap.ts';

/**
 * `Seq.steadyOrd` of a member that paused for a tool call in this step with its KV kept: its
 * counts are already real, and the group dissolves at the step's end with it in its place.
 */
export const DETACHED = -2;
/** `Seq.steadyOrd` of the member whose event is being applied one by one (its counts are real). */
const APPLYING = -3;

export class SteadyDecodes<R extends EngineRequest> {
  /** In admission order: the batch's head. */
  readonly members: Seq<R>[] = [];
  /** The next step the members have not taken. */
  k = 0;
  /** Step `k` is planned with every member in it (and not yet finished). */
  planned = false;
  /** Members in the planned step, those whose token was applied one by one, and those cancelled before theirs. */
  private plannedCount = 0;
  private processed = 0;
  private silenced = 0;
  /** Members cancelled in the step being finished after taking its token. */
  private tookRemoved = 0;
  /**
   * While the step's events are applied: the member being applied. Members before it have taken
   * their token at `k`, those after it have not. -1 outside that.
   */
  private cursor = -1;
  /** The order of the member being applied (`APPLYING`), kept for its return to the heap. */
  private applyingOrd = 0;
  private readonly blockSize: number;
  /** Members taking a block at steps ≡ phase (mod blockSize). */
  private readonly dueByPhase: Int32Array;
  /** Σ steadyCOff: the members' computed tokens before step k are this + size · k. */
  private sumCOff = 0;
  private nextOrd = 0;
  /** Members by their next event: (steadyEventK, steadyOrd). */
  private readonly events = new BinaryHeap<Seq<R>>(
    (a, b) =>
      a.steadyEventK < b.steadyEventK ||
      (a.steadyEventK === b.steadyEventK && a.steadyOrd < b.steadyOrd),
  );

  constructor(blockSize: number) {
    this.blockSize = blockSize;
    this.dueByPhase = new Int32Array(blockSize);
  }

  get size(): number {
    return this.members.length;
  }

  /**
   * Whether `s`, at the head of the running list after step `runs.step`, can join: running and
   * decoding (not prefilling, paused or held), its token at that step taken, and fewer than a
   * block of free slots (always so, but after a swap-in sized by the blocks it had).
   */
  eligible(s: Seq<R>, step: number): boolean {
    if (s.state !== SeqState.Running || s.prefilling || s.paused || s.held) return false;
    if (s.runTo !== step) return false;
    const room = s.blocks * this.blockSize - s.computed;
    return room >= 0 && room < this.blockSize;
  }

  /** `s` (eligible) joins at the back; `next` is the next step's number. */
  join(s: Seq<R>, next: number): void {
    if (this.members.length === 0) this.k = next;
    else if (this.k !== next) throw new EngineInvariantError('steady: joined out of step');
    s.steadyOrd = this.nextOrd++;
    this.rebase(s, next);
    s.steadyPhase = (next + s.blocks * this.blockSize - s.computed) % this.blockSize;
    this.dueByPhase[s.steadyPhase]++;
    this.sumCOff += s.steadyCOff;
    this.members.push(s);
    this.events.push(s);
  }

  /**
   * Plans step `k` for every member into `shape` within `budget` tokens and the free blocks:
   * false (nothing done) when either is short, and the caller dissolves the group.
   */
  plan(shape: StepShape, pool: KvBlockPool, budget: number): boolean {
    const n = this.members.length;
    const due = this.dueByPhase[this.k % this.blockSize];
    if (n > budget || due > pool.freeBlocks) return false;
    pool.allocate(due);
    shape.decodeSeqs += n;
    // Each token attends to everything in KV and to itself.
    shape.decodeContextTokens += this.sumCOff + n * this.k + n;
    this.planned = true;
    this.plannedCount = n;
    this.processed = 0;
    this.silenced = 0;
    this.tookRemoved = 0;
    return true;
  }

  /** The next member whose event is at step `k` (being finished), in admission order; undefined when none is left. */
  nextEvent(): Seq<R> | undefined {
    const top = this.events.peek();
    if (top === undefined || top.steadyEventK !== this.k) return undefined;
    this.events.pop();
    this.cursor = this.members.indexOf(top);
    // Its counts before its token: the caller applies the token one by one.
    this.write(top, false);
    this.forget(top);
    this.applyingOrd = top.steadyOrd;
    top.steadyOrd = APPLYING;
    this.processed++;
    return top;
  }

  /**
   * The member just returned by `nextEvent` has had its token applied: it goes on in the group
   * (its new counts taken as its base), stays in the batch paused (`DETACHED`: the caller
   * dissolves the group at the step's end), or left the batch.
   */
  afterEvent(s: Seq<R>): void {
    // Cancelled by a listener while its token was applied: already gone.
    if (s.steadyOrd !== APPLYING) return;
    if (s.state !== SeqState.Running) {
      s.steadyOrd = NOT_STEADY;
      this.removeAt(this.members.indexOf(s));
    } else if (s.paused) {
      s.steadyOrd = DETACHED;
    } else {
      s.steadyOrd = this.applyingOrd;
      this.rebase(s, this.k + 1);
      this.dueByPhase[s.steadyPhase]++;
      this.sumCOff += s.steadyCOff;
      this.events.push(s);
    }
  }

  /**
   * The members not applied one by one took their token at step `k`: returns how many, and
   * moves on to the next step.
   */
  finishStep(): number {
    if (!this.planned) throw new EngineInvariantError('steady: step finished but not planned');
    this.cursor = -1;
    this.planned = false;
    this.k++;
    this.tookRemoved = 0;
    return this.plannedCount - this.processed - this.silenced;
  }

  /**
   * While step `k`'s events are applied, the tokens members took at it that `finishStep` has
   * yet to count: members before the point reached (not those applied one by one: counted as
   * applied), and members cancelled after taking theirs. 0 between steps.
   */
  takenUncounted(): number {
    if (this.cursor < 0) return 0;
    let n = this.tookRemoved;
    for (let i = 0; i < this.cursor; i++) {
      const s = this.members[i];
      // A member applied one by one this step has its base at the next step.
      if (s.steadyOrd >= 0 && s.steadyK0 <= this.k) n++;
    }
    return n;
  }

  /**
   * `s`, a member, leaves the group (cancelled): its real counts are written, at the point the
   * step has reached. Returns whether it was a member.
   */
  remove(s: Seq<R>): boolean {
    if (s.steadyOrd === NOT_STEADY) return false;
    const i = this.members.indexOf(s);
    if (i < 0) return false;
    // Being applied or detached, its counts are real already.
    if (s.steadyOrd >= 0) {
      const took = this.cursor >= 0 && i < this.cursor;
      this.write(s, took);
      if (this.planned && !took) this.silenced++;
      if (took) this.tookRemoved++;
      this.forget(s);
      this.events.remove(s);
    }
    s.steadyOrd = NOT_STEADY;
    this.removeAt(i);
    return true;
  }

  /** Writes every member's real counts at the point the step has reached (reads, audits); the group goes on. */
  sync(): void {
    const m = this.members;
    for (let i = 0; i < m.length; i++) {
      if (m[i].steadyOrd >= 0) this.write(m[i], this.cursor >= 0 && i < this.cursor);
    }
  }

  /** Between steps: every member, its real counts written, back to the head of `running`. */
  dissolve(running: Seq<R>[]): void {
    if (this.planned) throw new EngineInvariantError('steady: dissolved with a step planned');
    const back: Seq<R>[] = [];
    for (const s of this.members) {
      if (s.steadyOrd >= 0) this.write(s, false);
      s.steadyOrd = NOT_STEADY;
      if (s.state === SeqState.Running) back.push(s);
    }
    running.unshift(...back);
    this.members.length = 0;
    this.events.clear();
    this.dueByPhase.fill(0);
    this.sumCOff = 0;
  }

  /**
   * Writes `s`'s real counts at the point reached: before step `k`, or (`took`) after its token
   * at `k`. Its blocks include those of step `k` once planned.
   */
  private write(s: Seq<R>, took: boolean): void {
    const j = this.k + (took ? 1 : 0);
    s.computed = s.steadyCOff + j;
    s.emitted = s.steadyEOff + j;
    s.runTo = j - 1;
    const last = this.planned ? this.k : this.k - 1;
    s.blocks = s.steadyB0 + countPhase(s.steadyK0, last, s.steadyPhase, this.blockSize);
  }

  /** Takes `s`'s counts now, before step `next`, as its base, and when its next event is. */
  private rebase(s: Seq<R>, next: number): void {
    s.steadyK0 = next;
    s.steadyCOff = s.computed - next;
    s.steadyEOff = s.emitted - next;
    s.steadyB0 = s.blocks;
    // The step whose token finishes it or reaches its tool call, or fills the ring of step ends.
    const end = Math.min(s.output, s.pauseAt) - s.steadyEOff - 1;
    s.steadyEventK = Math.min(end, reportsAt(s));
    if (s.steadyEventK < next) throw new EngineInvariantError(`steady: ${s.req.id} event passed`);
  }

  /** Takes its share out of the sums (its heap entry and order are the caller's). */
  private forget(s: Seq<R>): void {
    this.dueByPhase[s.steadyPhase]--;
    this.sumCOff -= s.steadyCOff;
  }

  private removeAt(i: number): void {
    this.members.splice(i, 1);
    if (i < this.cursor) this.cursor--;
  }
}

/** How many steps in [from, to] are ≡ phase (mod m). */
function countPhase(from: number, to: number, phase: number, m: number): number {
  if (to < from) return 0;
  return Math.floor((to - phase) / m) - Math.floor((from - 1 - phase) / m);
}

/** Whether a replica with this configuration, reporting decode tokens in runs, keeps a group. */
export function steadyAllowed(
  c: Pick<
    EngineConfig,
    | 'chunkedPrefill'
    | 'schedulerSteps'
    | 'schedulingPolicy'
    | 'decodeTokenBudget'
    | 'maxIterationMs'
    | 'preemptionVictims'
    | 'loraModules'
  >,
): boolean {
  return (
    c.chunkedPrefill &&
    c.schedulerSteps <= 1 &&
    c.schedulingPolicy !== 'priority' &&
    c.decodeTokenBudget === undefined &&
    c.maxIterationMs === undefined &&
    c.preemptionVictims !== 'slack' &&
    (c.loraModules?.length ?? 0) === 0
  );
}
