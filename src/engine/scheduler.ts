/**
 * Plans one iteration the way vLLM V1's scheduler does, with chunked prefill: walk the running
 * sequences in admission order, giving each what it needs (one token for a decode, the rest of
 * its prompt for a prefill) within the step's token budget and taking KV blocks as they grow;
 * then admit waiting sequences FIFO while budget, `maxNumSeqs` and blocks allow. The newest
 * admission is the one left partially prefilled, so admission order puts decodes first and a
 * chunked prefill after them. When a running sequence cannot grow, the most recently admitted
 * running one is preempted (recompute, or swap to host); after a preemption no new sequence is
 * admitted that step. Work is O(running + admitted) per step with no per-token allocation.
 */
import type { Ms } from '../core/request/units.ts';
import type { EngineListener, EngineRequest, PreemptionMode } from './engine-types.ts';
import type { EngineStats } from './engine-stats.ts';
import { Deque } from './deque.ts';
import type { KvCacheManager } from './kv-cache-manager.ts';
import { type Seq, SeqState, prefillRemaining } from './sequence.ts';
import type { StepShape } from './timing/profile.ts';

export interface SchedulerLimits {
  readonly maxNumSeqs: number;
  readonly maxBatchedTokens: number;
  readonly preemption: PreemptionMode;
}

const EV_PREFILL_START = 0;
const EV_PREEMPT_RECOMPUTE = 1;
const EV_PREEMPT_SWAP = 2;

export class Scheduler<R extends EngineRequest> {
  /** Admission order; the step in flight is exactly the members with `sched > 0`. */
  readonly running: Seq<R>[] = [];
  /** FIFO; cancelled members stay until they reach the front (`numWaiting` excludes them). */
  readonly waiting = new Deque<Seq<R>>(1024);
  numRunning = 0;
  numWaiting = 0;
  /** Σ prefillRemaining over live sequences. */
  pendingPrefill = 0;
  /** Blocks crossing the host link in the step just planned. */
  swapBlocks = 0;
  private readonly limits: SchedulerLimits;
  private readonly kv: KvCacheManager;
  private readonly stats: EngineStats;
  // Events of the step being planned, emitted after planning so a listener never sees (or
  // mutates) a half-planned step.
  private readonly evKind: number[] = [];
  private readonly evSeq: Seq<R>[] = [];
  private evCount = 0;

  constructor(limits: SchedulerLimits, kv: KvCacheManager, stats: EngineStats) {
    this.limits = limits;
    this.kv = kv;
    this.stats = stats;
  }

  enqueue(s: Seq<R>): void {
    this.waiting.pushBack(s);
    this.numWaiting++;
    this.pendingPrefill += prefillRemaining(s);
  }

  /** Plans the next step into `shape` (already zeroed); returns how many sequences it holds. */
  schedule(shape: StepShape): number {
    const running = this.running;
    const kv = this.kv;
    let budget = this.limits.maxBatchedTokens;
    let scheduled = 0;
    let preempted = false;
    this.swapBlocks = 0;
    this.evCount = 0;
    for (let i = 0; i < running.length && budget > 0; i++) {
      const s = running[i];
      const tokens = s.prefilling ? Math.min(s.target - s.computed, budget) : 1;
      let ok = kv.grow(s, s.computed + tokens);
      // Victims come from the back, so none of them is already in this step.
      while (!ok) {
        const victim = running.pop() as Seq<R>;
        this.preempt(victim);
        preempted = true;
        if (victim === s) break;
        ok = kv.grow(s, s.computed + tokens);
      }
      if (!ok) break;
      s.sched = tokens;
      budget -= tokens;
      scheduled++;
      addToShape(shape, s, tokens);
    }
    if (!preempted || scheduled === 0) scheduled += this.admit(shape, budget);
    return scheduled;
  }

  /** Emits the planned step's prefill-start and preemption events, in planning order. */
  flushEvents(listener: EngineListener<R>, atMs: Ms): void {
    for (let i = 0; i < this.evCount; i++) {
      const s = this.evSeq[i];
      // A listener may have cancelled it while handling an earlier event of this step.
      if (s.state === SeqState.Cancelled) continue;
      const kind = this.evKind[i];
      if (kind === EV_PREFILL_START) listener.onPrefillStart(s.req, atMs);
      else listener.onPreempt(s.req, atMs, kind === EV_PREEMPT_SWAP ? 'swap' : 'recompute');
    }
    this.evCount = 0;
  }

  private admit(shape: StepShape, budgetIn: number): number {
    const { running, waiting, kv } = this;
    const maxSeqs = this.limits.maxNumSeqs;
    let budget = budgetIn;
    let admitted = 0;
    while (budget > 0 && running.length < maxSeqs) {
      const s = waiting.peekFront();
      if (s === undefined) break;
      if (s.state === SeqState.Cancelled) {
        waiting.popFront();
        continue;
      }
      let tokens: number;
      if (s.state === SeqState.Swapped) {
        tokens = s.prefilling ? Math.min(s.target - s.computed, budget) : 1;
        const moved = s.hostBlocks;
        if (!kv.swapIn(s, s.computed + tokens)) break;
        this.swapBlocks += moved;
        this.stats.swapTransferBlocks += moved;
      } else {
        tokens = kv.admit(s, budget);
        if (tokens === 0) break;
        this.pendingPrefill -= s.cachedTokens;
        this.stats.promptTokens += s.target;
        this.stats.prefixHitTokens += s.cachedTokens;
        this.record(EV_PREFILL_START, s);
      }
      waiting.popFront();
      this.numWaiting--;
      this.numRunning++;
      s.state = SeqState.Running;
      running.push(s);
      s.sched = tokens;
      budget -= tokens;
      admitted++;
      addToShape(shape, s, tokens);
    }
    return admitted;
  }

  private preempt(v: Seq<R>): void {
    this.numRunning--;
    this.stats.preemptions++;
    if (this.limits.preemption === 'swap' && this.kv.swapOut(v)) {
      v.state = SeqState.Swapped;
      this.swapBlocks += v.hostBlocks;
      this.stats.swapTransferBlocks += v.hostBlocks;
      this.stats.preemptionsSwap++;
      this.record(EV_PREEMPT_SWAP, v);
    } else {
      this.pendingPrefill -= prefillRemaining(v);
      this.kv.freeSeq(v);
      v.restart();
      this.pendingPrefill += v.target;
      v.state = SeqState.Waiting;
      this.stats.preemptionsRecompute++;
      this.record(EV_PREEMPT_RECOMPUTE, v);
    }
    this.waiting.pushFront(v);
    this.numWaiting++;
  }

  private record(kind: number, s: Seq<R>): void {
    this.evKind[this.evCount] = kind;
    this.evSeq[this.evCount] = s;
    this.evCount++;
  }
}

function addToShape(shape: StepShape, s: Seq<EngineRequest>, tokens: number): void {
  if (s.prefilling) {
    shape.prefillTokens += tokens;
    shape.prefillSeqs++;
    shape.prefillAttnWork += tokens * (s.computed + tokens);
  } else {
    shape.decodeSeqs++;
    // The new token attends to everything in KV and to itself.
    shape.decodeContextTokens += s.computed + 1;
  }
}
