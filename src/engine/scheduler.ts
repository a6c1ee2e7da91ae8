/**
 * Plans one iteration. With chunked prefill, the way vLLM V1's scheduler does: walk the running
 * sequences in admission order, giving each what it needs (one token for a decode, the rest of
 * its prompt for a prefill) within the step's token budget and taking KV blocks as they grow;
 * then admit waiting sequences FIFO while budget, `maxNumSeqs` and blocks allow. The newest
 * admission is the one left partially prefilled, so admission order puts decodes first and a
 * chunked prefill after them. Without it, as vLLM V0 does: a step of whole prompts whenever one
 * can be admitted, else a step of decodes. With `schedulerSteps` N > 1 (V0's multi-step), a
 * decode step is planned once and run N times with no admission in between. When a running
 * sequence cannot grow, the most recently admitted running one is preempted (recompute, or
 * swap to host); after a preemption no new sequence is admitted that step. Work is
 * O(running + admitted) per step with no per-token allocation; a head of the batch that only
 * decodes is planned in one stroke (`steady-decodes.ts`). Admission from the waiting queue
 * is `admission.ts`; what a scheduled sequence adds to the step's shape, `step-shape.ts`.
 */
import type { Ms } from '../core/request/units.ts';
import type { EngineConfig, EngineListener, EngineRequest } from './engine-types.ts';
import type { EngineStats } from './engine-stats.ts';
import { WaitingQueue } from './waiting-queue.ts';
import type { KvCacheManager } from './kv-cache-manager.ts';
import { type Seq, SeqState, prefillRemaining } from './sequence.ts';
import type { StepShape } from './timing/profile.ts';
import type { StepCosts } from './step-costs.ts';
import { LoraSlots } from './lora-slots.ts';
import { idleFromBack, slackVictim } from './victims.ts';
import { holdForWaiting, unhold } from './holds.ts';
import { StepEvents } from './step-events.ts';
import type { TokenRuns } from './token-runs.ts';
import { ADMIT_ANY, ADMIT_SWAPPED, ADMIT_WHOLE_PROMPTS, admit } from './admission.ts';
import { addToShape } from './step-shape.ts';
import { chunkOf, endsPiece } from './pieces.ts';
import { SteadyDecodes } from './steady-decodes.ts';

/** What of the engine's configuration the scheduler plans by (documented on `EngineConfig`). */
export type SchedulerLimits = Pick<
  EngineConfig,
  | 'maxNumSeqs'
  | 'maxBatchedTokens'
  | 'preemption'
  | 'chunkedPrefill'
  | 'schedulerSteps'
  | 'longPrefillTokenThreshold'
  | 'maxIterationMs'
  | 'schedulingPolicy'
  | 'ttftBoostMs'
  | 'preemptionVictims'
  | 'decodeTokenBudget'
  | 'loraModules'
  | 'maxLoras'
  | 'loraLoadMs'
  | 'prefixCachedOnAllocation'
>;

export class Scheduler<R extends EngineRequest> {
  /** Admission order; the step in flight is exactly the members with `sched > 0`. */
  readonly running: Seq<R>[] = [];
  /** FIFO (per priority level); cancelled members stay until they reach the front (`numWaiting` excludes them). */
  readonly waiting: WaitingQueue<Seq<R>>;
  numRunning = 0;
  numWaiting = 0;
  /** Σ prefillRemaining over live sequences. */
  pendingPrefill = 0;
  /** Blocks crossing the host link in the step just planned. */
  swapBlocks = 0;
  /** Sequences in the batch that are not scheduled: paused for a tool (KV kept) or held. */
  numIdle = 0;
  /** The time of the step being planned (the TTFT boost reads it). */
  private nowMs = 0;
  /** Whether a waiting sequence is near enough its first-token deadline to go first. */
  readonly boosted: ((s: Seq<R>) => boolean) | undefined;
  /** Decode steps left in the current multi-step round, after the one just planned. */
  roundLeft = 0;
  // Side results of scheduleRunning, kept in fields so planning a step allocates nothing.
  private preempted = false;
  private budgetLeft = 0;
  // Not private from here on: admission.ts, the waiting queue's half of planning, reads them too.
  readonly limits: SchedulerLimits;
  readonly kv: KvCacheManager;
  readonly stats: EngineStats;
  /** The step being planned's prefill starts and preemptions, emitted once it is planned. */
  readonly events = new StepEvents<R>();

  readonly chunkCap: number;
  /** Staged prompts that sat out the step being planned, their piece just computed. */
  private rested = 0;
  readonly byPriority: boolean;
  /** LoRA slots and the per-step adapter limit; null when no adapter is served. */
  readonly lora: LoraSlots | null;
  /** Waiting sequences passed over this step for their adapter (reused). */
  readonly skipped: Seq<R>[] = [];
  /** What steps and swaps are predicted to cost (the iteration-time cap, `auto` choices). */
  readonly costs: StepCosts;
  /** The batch's head of sequences only decoding, planned in one stroke; null when not kept. */
  readonly steady: SteadyDecodes<R> | null;

  constructor(
    limits: SchedulerLimits,
    kv: KvCacheManager,
    stats: EngineStats,
    costs: StepCosts,
    steady = false,
  ) {
    this.limits = limits;
    this.steady = steady ? new SteadyDecodes<R>(kv.blockSize) : null;
    this.kv = kv;
    this.stats = stats;
    const t = limits.longPrefillTokenThreshold ?? 0;
    this.chunkCap = t > 0 ? t : Infinity;
    this.byPriority = limits.schedulingPolicy === 'priority';
    this.costs = costs;
    this.waiting = new WaitingQueue((s) => (this.byPriority ? (s.req.priority ?? 0) : 0));
    this.lora =
      (limits.loraModules?.length ?? 0) === 0
        ? null
        : new LoraSlots(limits.maxLoras ?? 1, limits.loraLoadMs ?? 0);
    const boostMs = limits.ttftBoostMs;
    this.boosted =
      boostMs === undefined || !this.byPriority
        ? undefined
        : (s) => {
            // Near its deadline, not past it: a first token already late gains nothing.
            const left = (s.req.ttftDeadlineMs ?? -Infinity) - this.nowMs;
            return s.emitted === 0 && left >= 0 && left <= boostMs;
          };
  }

  enqueue(s: Seq<R>): void {
    this.waiting.pushBack(s);
    this.numWaiting++;
    this.pendingPrefill += prefillRemaining(s);
  }

  /** Plans the next step at `nowMs` into `shape` (already zeroed); returns how many it holds. */
  schedule(shape: StepShape, nowMs = 0): number {
    this.nowMs = nowMs;
    this.swapBlocks = 0;
    if (this.lora !== null) this.lora.loads = 0;
    this.events.clear();
    if (this.roundLeft > 0) {
      // Inside a multi-step round the batch is fixed: its decodes run on, nothing is admitted.
      this.roundLeft--;
      const scheduled = this.scheduleRunning(shape, Infinity);
      if (scheduled > 0) return scheduled;
      this.roundLeft = 0;
    }
    this.rested = 0;
    let scheduled = this.plan(shape);
    // A plan that preempted every sequence it could run holds nothing: vLLM runs an empty
    // iteration and plans again. Planned here is that next one (each pass preempts more, or
    // ends), so a step is never empty while there is work.
    while (scheduled === 0 && this.preempted) scheduled = this.plan(shape);
    // Staged prompts resting alone: with no step to wait out, their next pieces are already here.
    if (scheduled === 0 && this.rested > 0) scheduled = this.plan(shape);
    // A round of decode steps is planned once; a step with a prompt in it stands alone.
    if (shape.prefillTokens === 0) this.roundLeft = this.limits.schedulerSteps - 1;
    return scheduled;
  }

  private plan(shape: StepShape): number {
    return this.limits.chunkedPrefill
      ? this.scheduleChunked(shape)
      : this.schedulePrefillFirst(shape);
  }

  /**
   * vLLM V1, and V0 with chunked prefill: the running sequences first, each with what it needs
   * within the budget, then waiting ones FIFO, the last possibly with a chunk of its prompt.
   */
  private scheduleChunked(shape: StepShape): number {
    holdForWaiting(this);
    unhold(this, this.limits.maxNumSeqs);
    const budget =
      this.limits.maxIterationMs === undefined
        ? this.limits.maxBatchedTokens
        : this.costs.iterationBudget(this.running, this.limits);
    const scheduled = this.scheduleRunning(shape, budget);
    if (this.preempted && scheduled > 0) return scheduled;
    return scheduled + admit(this, shape, this.budgetLeft, ADMIT_ANY);
  }

  /**
   * vLLM V0 without chunked prefill: whenever the head of the queue can be admitted (and it is
   * not a swapped-out sequence), the step holds only whole prompts, admitted FIFO while budget,
   * seats and blocks allow; otherwise it is a decode step of every running sequence, with
   * swapped-out ones brought back after them. Prompts come before decodes, so TTFT is short
   * and overload shows as slower tokens rather than as queueing.
   */
  private schedulePrefillFirst(shape: StepShape): number {
    unhold(this, this.limits.maxNumSeqs);
    const admitted = admit(this, shape, this.limits.maxBatchedTokens, ADMIT_WHOLE_PROMPTS);
    if (admitted > 0) return admitted;
    const scheduled = this.scheduleRunning(shape, Infinity);
    if (this.preempted && scheduled > 0) return scheduled;
    return scheduled + admit(this, shape, Infinity, ADMIT_SWAPPED);
  }

  /**
   * Gives each running sequence what it needs, in admission order, within `budget`, preempting
   * from the back when one cannot grow. Leaves `preempted` and `budgetLeft` set.
   */
  private scheduleRunning(shape: StepShape, budgetIn: number): number {
    const running = this.running;
    const kv = this.kv;
    let budget = budgetIn;
    let scheduled = 0;
    let decodesLeft = this.limits.decodeTokenBudget ?? Infinity;
    this.preempted = false;
    // The steady head first, as the walk below would take it, or back into the walk.
    const steady = this.steady;
    if (steady !== null && steady.size > 0 && !steady.planned) {
      if (steady.plan(shape, kv.pool, budget)) {
        budget -= steady.size;
        scheduled += steady.size;
      } else {
        steady.dissolve(running);
      }
    }
    for (let i = 0; i < running.length && budget > 0; i++) {
      const s = running[i];
      if (s.paused || s.held) continue;
      if (!s.prefilling && decodesLeft === 0) {
        // Over the decode budget: it sits this step out, its KV held.
        this.stats.decodesDeferred++;
        continue;
      }
      if (s.pieceRest) {
        // Its next staged piece is being sent: this step runs without it.
        s.pieceRest = false;
        this.rested++;
        continue;
      }
      const tokens = s.prefilling ? chunkOf(s, budget, this.chunkCap) : 1;
      let ok = kv.grow(s, s.computed + tokens);
      // Victims come from at or after `i`, so none of them is already in this step; a sequence
      // paused for a tool call goes first — its KV is idle.
      while (!ok) {
        const idle = idleFromBack(running, i);
        const victim = running.splice(idle >= 0 ? idle : this.victimFrom(i), 1)[0];
        this.preempt(victim);
        this.preempted = true;
        if (victim === s) break;
        ok = kv.grow(s, s.computed + tokens);
      }
      if (!ok) {
        // It was the victim itself: the next one has its place.
        i--;
        continue;
      }
      if (
        s.prefilling &&
        this.limits.prefixCachedOnAllocation === true &&
        s.cacheNext < s.cacheLimit
      )
        kv.commit(s, s.computed + tokens);
      s.sched = tokens;
      budget -= tokens;
      if (s.prefilling) endsPiece(s, tokens);
      else decodesLeft--;
      scheduled++;
      addToShape(shape, s, tokens);
    }
    this.budgetLeft = budget;
    return scheduled;
  }

  /** Emits the planned step's prefill-start and preemption events, in planning order. */
  flushEvents(listener: EngineListener<R>, atMs: Ms, runs: TokenRuns<R> | null): void {
    this.events.flush(listener, atMs, runs);
  }

  /** Time the step being planned spends bringing adapters into GPU slots. */
  get loraLoadMs(): number {
    return this.lora === null ? 0 : this.lora.loads * this.lora.loadMs;
  }

  /**
   * Whether a victim is swapped out rather than recomputed: as configured, or under `auto` when
   * moving its blocks out and back is predicted faster than prefilling what it has computed.
   */
  private swaps(v: Seq<R>): boolean {
    const mode = this.limits.preemption;
    return mode === 'auto' ? this.costs.swapIsCheaper(v) : mode === 'swap';
  }

  /**
   * The running sequence preempted for one at `i` that cannot grow: the back of the list (vLLM),
   * or under `slack` the one among `running[i..]` whose objectives a stall costs least.
   */
  private victimFrom(i: number): number {
    const running = this.running;
    if (this.limits.preemptionVictims !== 'slack') return running.length - 1;
    let stepMs: Ms | undefined;
    return slackVictim(running, i, this.byPriority, this.nowMs, () => {
      stepMs ??= this.costs.decodeStepMs(running);
      return stepMs;
    });
  }

  /** A running sequence stops being scheduled (paused for a tool with its KV, or held). */
  markIdle(): void {
    this.numIdle++;
  }

  unmarkIdle(): void {
    this.numIdle--;
  }

  /**
   * Moves a sequence paused for a tool call out of the running batch (`detach`), its KV to host or freed
   * (`swap` false: dropped, its context prefilled again on resume). It waits nowhere: its resume
   * puts it at the front of the waiting queue.
   */
  release(v: Seq<R>, swap: boolean, detach = true): 'swap' | 'drop' {
    // `detach` false: the caller is compacting the batch itself (the end of a step), and the
    // sequence was never idle in the batch.
    if (detach) {
      this.running.splice(this.running.indexOf(v), 1);
      this.numIdle--;
    }
    this.numRunning--;
    if (swap && this.kv.swapOut(v)) {
      v.state = SeqState.Swapped;
      this.swapBlocks += v.hostBlocks;
      this.stats.swapTransferBlocks += v.hostBlocks;
      return 'swap';
    }
    this.kv.freeSeq(v);
    this.pendingPrefill -= prefillRemaining(v);
    v.restart();
    this.pendingPrefill += prefillRemaining(v);
    v.state = SeqState.Waiting;
    return 'drop';
  }

  /** A held sequence gives up its KV too: preempted, back to the waiting queue. */
  preemptHeld(v: Seq<R>): void {
    this.running.splice(this.running.indexOf(v), 1);
    this.preempt(v);
  }

  /** Sequences in the batch that are scheduled (not paused, not held). */
  get activeRunning(): number {
    return this.running.length + (this.steady?.size ?? 0) - this.numIdle;
  }

  /** The whole batch in admission order, every count real (audits). */
  batch(): Seq<R>[] {
    const steady = this.steady;
    if (steady === null) return this.running;
    steady.sync();
    return [...steady.members, ...this.running];
  }

  /** A released paused sequence resumes: to the front of the waiting queue. */
  requeue(v: Seq<R>): void {
    this.waiting.pushFront(v);
    this.numWaiting++;
  }

  private preempt(v: Seq<R>): void {
    if (v.paused || v.held) this.numIdle--;
    v.held = false;
    this.numRunning--;
    this.stats.preemptions++;
    if (this.swaps(v) && this.kv.swapOut(v)) {
      v.state = SeqState.Swapped;
      this.swapBlocks += v.hostBlocks;
      this.stats.swapTransferBlocks += v.hostBlocks;
      this.stats.preemptionsSwap++;
      this.events.record('swap', v);
    } else {
      this.pendingPrefill -= prefillRemaining(v);
      this.stats.recomputedTokens += v.computed;
      this.kv.freeSeq(v);
      v.restart();
      this.pendingPrefill += v.target;
      v.state = SeqState.Waiting;
      this.stats.preemptionsRecompute++;
      this.events.record('recompute', v);
    }
    // A paused one waits nowhere until its tool call returns (`requeue`).
    if (v.paused) return;
    this.waiting.pushFront(v);
    this.numWaiting++;
  }
}
