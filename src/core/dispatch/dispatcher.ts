/**
 * The dispatcher: admitted requests wait here in priority bands (within a band, by tenant
 * fairness — virtual token counters — or FIFO, as the policy's `queueing.order` says; band 0 is
 * served first and a lower band waits while a higher one has work), deferred ones in their own
 * queue served only from leftover capacity. `pump` places what fits — under flow control, or at
 * once when the policy dispatches immediately — and drops what can no longer meet its deadline.
 * A request that does not fit is passed by at most `lookahead` younger ones, and the first such
 * request gets a replica held for it — no new work goes there until it fits — so nothing
 * starves behind smaller work.
 */
import type { DispatchConfig } from '../config/stage-schema.ts';
import type { FleetSpec } from '../estimate/fleet-spec.ts';
import type { Ticket } from '../queueing/ticket.ts';
import type { TicketQueue, WaitQueue } from '../queueing/ticket-queue.ts';
import { FairQueue } from '../queueing/fair-queue.ts';
import { ContractBook, type PassReason } from '../queueing/class-contract.ts';
import { WaitingBands, type Band, type BandOrder } from '../queueing/bands.ts';
import { DispatchRate } from '../queueing/dispatch-rate.ts';
import type { Ms } from '../request/units.ts';
import type { ReplicaSnapshot } from '../routing/replica-snapshot.ts';
import type { Router } from '../routing/router.ts';
import { FlowControl, type Candidate, type Fit } from './flow-control.ts';
import { gapsToSpare } from './gap-tolerance.ts';
import { ReplicaLedger } from './replica-ledger.ts';

/** At most this fraction of the replicas (and at least one) is held for long prompts at once. */
const MAX_HELD_RATIO = 0.5;
/** Share of the step budget a prompt's prefill may take and still count as short. */
const LONG_PROMPT_SHARE = 0.9;

export interface DispatchSink<H> {
  /** Send the ticket's request to `ticket.replica`. */
  dispatch(ticket: Ticket<H>): void;
  /** The ticket waited past its deadline and left the queue. */
  expire(ticket: Ticket<H>): void;
}

export class Dispatcher<H> {
  readonly ledger: ReplicaLedger;
  readonly flow: FlowControl;
  readonly rate = new DispatchRate();
  /** The same for long prompts alone, which pass through held replicas at their own pace. */
  readonly longRate = new DispatchRate();
  /** The priority bands and the deferred queue. */
  readonly waiting: WaitingBands<H>;
  private readonly config: DispatchConfig;
  private readonly bandOrder: BandOrder;
  private readonly router: Router;
  private readonly routerState: unknown;
  private readonly sink: DispatchSink<H>;
  private readonly lookahead: number;
  private readonly itlMargin: number;
  /**
   * A replica held back from new work for an aged request that fits nowhere (a long prompt that
   * would stall every stream it joins): with nothing new arriving, its streams finish or grow
   * tolerant, and the request goes there. One at a time, so capacity is never idled wholesale.
   */
  private held: { ticket: Ticket<H>; replica: number }[] = [];
  /** Reused by every scan of a queue. */
  private readonly scratch: Ticket<H>[] = [];
  private nowMs: Ms = 0;
  /**
   * Recent queue waits of long prompts (EWMA, ms), which wait for a replica whose streams can
   * absorb a slow step: admission predicts a new long prompt's wait from it.
   */
  longPromptWaitMs = 0;
  /** Long prompts that have left the queue: until one has, their wait is unknown. */
  longPromptsSeen = 0;
  /** The class contracts' judgement, shares and accounts. */
  readonly contracts = new ContractBook();

  /** Dispatches made ahead of a band with work waiting, by contract (`ContractBook.passes`). */
  get passes(): Readonly<Record<PassReason | 'priority', number>> {
    return this.contracts.passes;
  }

  /** Work dispatched per class over the run (`ContractBook.workByClass`). */
  get workByClass(): ReadonlyMap<string, number> {
    return this.contracts.workByClass;
  }

  constructor(
    config: DispatchConfig,
    bandOrder: BandOrder,
    spec: FleetSpec,
    router: Router,
    sink: DispatchSink<H>,
  ) {
    this.config = config;
    this.bandOrder = bandOrder;
    this.waiting = new WaitingBands(bandOrder);
    this.router = router;
    this.routerState = router.initState();
    this.sink = sink;
    this.ledger = new ReplicaLedger(0);
    this.flow = new FlowControl(
      spec,
      config.type === 'flow-control'
        ? config
        : { itlMarginRatio: 0, kvReserveRatio: 0, stallRisk: 0 },
    );
    this.lookahead = config.type === 'flow-control' ? config.lookahead : 1;
    this.itlMargin = config.type === 'flow-control' ? config.itlMarginRatio : 0;
  }

  enqueue(t: Ticket<H>): void {
    t.state = 'queued';
    const itl = t.cls.objectives.itlP99Ms;
    t.long =
      this.config.type === 'flow-control' &&
      itl !== undefined &&
      this.isLongPrefill(t.demand.prefillMs, itl);
    this.waiting.enqueue(t);
  }

  defer(t: Ticket<H>): void {
    this.waiting.defer(t);
  }

  /** The deferred queue (leftover-capacity work). */
  get deferred(): TicketQueue<Ticket<H>> {
    return this.waiting.deferred;
  }

  /** Whether work of lower priority than `priority` waits, in a band or deferred. */
  lowerWaiting(priority: number): boolean {
    return this.waiting.lowerWaiting(priority);
  }

  hasWaiting(): boolean {
    return this.waiting.hasWaiting();
  }

  /** Every waiting ticket, bands first, then the deferred queue. */
  waitingTickets(): Generator<Ticket<H>> {
    return this.waiting.tickets();
  }

  /** Takes a waiting ticket out (its client gave up). */
  withdraw(t: Ticket<H>): void {
    this.waiting.withdraw(t);
  }

  /** `WaitingBands.ahead`. */
  waitingAhead(priority: number, long: boolean, tenant?: string): number {
    return this.waiting.ahead(priority, long, tenant);
  }

  /** `WaitingBands.tenantPaceMs`. */
  tenantPaceMs(priority: number, tenant: string): Ms | undefined {
    return this.waiting.tenantPaceMs(priority, tenant);
  }

  /** `WaitingBands.oldestOfferedMs`, looking `lookahead` deep. */
  oldestOfferedMs(priority: number, tenant?: string): Ms {
    return this.waiting.oldestOfferedMs(priority, this.lookahead, tenant);
  }

  /** Where `t` would go now, without placing it; -1 when nowhere fits. */
  wouldFit(t: Pick<Ticket<H>, 'req' | 'demand' | 'cls'>, replicas: readonly ReplicaSnapshot[]) {
    for (const r of replicas) {
      if (this.held.some((h) => h.replica === r.index && h.ticket.queued)) continue;
      if (this.fit(t, r).kind !== 'no') return true;
    }
    return false;
  }

  /** Whether some replica has room to hold `t` once its prefills are done (FlowControl.holds). */
  couldHold(t: Pick<Ticket<H>, 'req' | 'demand' | 'cls'>, replicas: readonly ReplicaSnapshot[]) {
    for (const r of replicas) {
      this.ledger.resize(r.index + 1);
      if (this.flow.holds(this.ledger.replicas[r.index], candidate(t), r.kvUsage)) return true;
    }
    return false;
  }

  /**
   * Places what fits, oldest and most urgent first; drops what has expired. `admitDeferred`
   * re-decides a deferred ticket now that capacity is free (true: admitted, place it).
   */
  pump(nowMs: Ms, replicas: readonly ReplicaSnapshot[], admitDeferred: (t: Ticket<H>) => boolean) {
    this.nowMs = nowMs;
    this.ledger.resize(replicas.length === 0 ? 0 : replicas[replicas.length - 1].index + 1);
    const live = { replicas };
    // Contracts first: a band whose oldest request has starved, one under its reserved share,
    // one aged up to the front — each places what fits while its reason holds. A starved
    // deferred request goes too (admission still re-decides it).
    const bands = this.waiting.bands;
    const first = bands.find((b) => b.queue.live > 0);
    if (first !== undefined && this.config.type !== 'immediate') {
      for (const b of bands) {
        const reason = this.passReason(b, first, nowMs);
        if (reason === null) continue;
        this.contracts.phase = reason;
        const oldestOnly = reason === 'starvation';
        this.pumpQueue(b.queue, nowMs, live, null, oldestOnly, () => {
          return this.passReason(b, first, nowMs) !== reason;
        });
      }
      const d = this.deferred.peek();
      const starve = d?.cls.contract.starvationMs;
      if (d !== undefined && starve !== undefined && nowMs - d.offeredMs >= starve) {
        this.contracts.phase = 'starvation';
        this.pumpQueue(this.deferred, nowMs, live, admitDeferred, true, () => {
          const h = this.deferred.peek();
          return h === undefined || nowMs - h.offeredMs < (h.cls.contract.starvationMs ?? Infinity);
        });
      }
    }
    // Then strict priority: a lower band waits while a higher one has work — except that a band
    // past its maximum share yields to the others with work, and gets what is left after them.
    let yielded: Band<H>[] | null = null;
    for (const b of bands) {
      if (b.queue.live === 0) continue;
      if (this.contracts.overMax(b, nowMs) && bands.some((o) => o !== b && o.queue.live > 0)) {
        (yielded ??= []).push(b);
        continue;
      }
      this.contracts.phase = yielded === null ? null : 'max_share';
      this.pumpQueue(b.queue, nowMs, live, null);
      if (b.queue.live > 0) {
        this.contracts.phase = null;
        return;
      }
    }
    this.contracts.phase = null;
    for (const b of yielded ?? []) {
      this.pumpQueue(b.queue, nowMs, live, null);
      if (b.queue.live > 0) return;
    }
    // Deferred work runs on leftover capacity: none is left while a class above it is refusing
    // requests for their wait (a higher class refused while lower work is served is the
    // inversion to avoid). Starved deferred requests went above, under their contract.
    const head = this.deferred.peek();
    if (head !== undefined && this.bandOrder.pressedAbove?.(head.band, nowMs) === true) {
      return;
    }
    this.pumpQueue(this.deferred, nowMs, live, admitDeferred);
  }

  /** Which contract, if any, lets `b` go before `first` (the highest band with work) now. */
  private passReason(b: Band<H>, first: Band<H>, nowMs: Ms): PassReason | null {
    if (!ContractBook.binds(b.contract) || b === first || b.queue.live === 0) return null;
    const oldest = b.queue.oldest();
    const waited = oldest === undefined ? 0 : nowMs - oldest.offeredMs;
    return this.contracts.passReason(b, first.priority, waited, nowMs);
  }

  /** `live.replicas` loses a replica on trial once it has its one request. */
  /**
   * `oldestOnly`: only the queue's oldest member is a candidate (a starved one); `done`, asked
   * after each placement, ends the pass early (its contract no longer holds).
   */
  private pumpQueue(
    queue: WaitQueue<Ticket<H>>,
    nowMs: Ms,
    live: { replicas: readonly ReplicaSnapshot[] },
    admitDeferred: ((t: Ticket<H>) => boolean) | null,
    oldestOnly = false,
    done?: () => boolean,
  ): void {
    for (;;) {
      const replicas = live.replicas;
      let placed = false;
      const candidates = oldestOnly
        ? this.oldestOf(queue)
        : queue.collect(this.lookahead, this.scratch, nowMs);
      for (const t of candidates) {
        if (t.expiresMs <= nowMs) {
          this.waiting.take(queue, t);
          this.noteWait(t, nowMs);
          this.sink.expire(t);
          placed = true;
          break;
        }
        const replica = replicas.length === 0 ? -1 : this.choose(t, replicas);
        if (replica >= 0 && (admitDeferred === null || admitDeferred(t))) {
          this.waiting.take(queue, t);
          if (queue instanceof FairQueue) queue.dispatched(t, nowMs);
          this.send(t, replica, replicas, nowMs, queue.live > 0);
          if (replicas.some((r) => r.index === replica && r.probe === true)) {
            live.replicas = replicas.filter((r) => r.index !== replica);
          }
          placed = true;
          break;
        }
        if (this.config.type === 'immediate') break;
        this.maybeHold(t, replicas);
      }
      if (!placed || done?.() === true) return;
    }
  }

  private oldestOf(queue: WaitQueue<Ticket<H>>): Ticket<H>[] {
    this.scratch.length = 0;
    const t = queue.oldest();
    if (t !== undefined) this.scratch.push(t);
    return this.scratch;
  }

  private choose(t: Ticket<H>, all: readonly ReplicaSnapshot[]): number {
    const replicas = t.avoid >= 0 && all.length > 1 ? all.filter((r) => r.index !== t.avoid) : all;
    if (this.config.type === 'immediate')
      return replicas[this.router.pick(this.routerState, t.req, replicas)].index;
    if (this.held.length > 0) this.held = this.held.filter((h) => h.ticket.queued);
    const fast: ReplicaSnapshot[] = [];
    const slow: ReplicaSnapshot[] = [];
    for (const r of replicas) {
      if (this.held.some((h) => h.replica === r.index && h.ticket !== t)) continue;
      const f = this.fit(t, r);
      if (f.kind === 'fast') fast.push(r);
      else if (f.kind === 'slow') slow.push(r);
    }
    const pool = fast.length > 0 ? fast : slow;
    if (pool.length === 0) return -1;
    const held = this.held.find((h) => h.ticket === t);
    // A request with a held replica goes there: the hold was for it.
    if (held !== undefined) {
      this.held = this.held.filter((h) => h !== held);
      if (pool.some((r) => r.index === held.replica)) return held.replica;
    }
    return pool[this.router.pick(this.routerState, t.req, pool)].index;
  }

  /** A long prompt that fits nowhere gets a replica held for it, while holds are few. */
  private maybeHold(t: Ticket<H>, replicas: readonly ReplicaSnapshot[]): void {
    if (!t.long) return;
    if (this.held.some((h) => h.ticket === t)) return;
    if (this.held.length >= Math.max(1, Math.floor(replicas.length * MAX_HELD_RATIO))) return;
    const free = replicas.filter((r) => !this.held.some((h) => h.replica === r.index));
    if (free.length === 0) return;
    this.held.push({ ticket: t, replica: this.leastCommitted(free) });
  }

  /**
   * A prompt whose prefill takes most of a step's budget by itself: next to a replica's usual
   * decodes it makes a slow step, so it waits for a replica that can absorb one.
   */
  isLongPrompt(promptTokens: number, itlSloMs: Ms): boolean {
    return this.isLongPrefill(this.flow.prefillMs(Math.min(promptTokens, 1 << 20)), itlSloMs);
  }

  /** The same test on a prefill time already predicted (a ticket's demand carries it). */
  private isLongPrefill(prefillMs: Ms, itlSloMs: Ms): boolean {
    return prefillMs > LONG_PROMPT_SHARE * itlSloMs * (1 - this.itlMargin);
  }

  /** Feeds the long-prompt wait estimate with a ticket that left the queue (either way). */
  noteWait(t: Ticket<H>, nowMs: Ms): void {
    if (!t.long || t.wasDeferred) return;
    const waited = nowMs - t.offeredMs;
    this.longPromptWaitMs =
      this.longPromptsSeen++ === 0
        ? waited
        : this.longPromptWaitMs + 0.2 * (waited - this.longPromptWaitMs);
  }

  /**
   * The replica likely to tolerate a stall soonest: the one whose least-ready stream has the
   * fewest tokens to go before its p99 can spare one more slow gap (about 100 gaps per slow gap
   * it holds, counting this one), then the one with fewer streams.
   */
  private leastCommitted(replicas: readonly ReplicaSnapshot[]): number {
    let best = replicas[0].index;
    let bestScore = Infinity;
    for (const r of replicas) {
      const entries = this.ledger.replicas[r.index].entries;
      let togo = 0;
      for (const e of entries) {
        if (e.itlSloMs === Infinity) continue;
        const needs = gapsToSpare(e.slowGaps + 1) - e.streamed;
        if (needs > togo) togo = needs;
      }
      const score = togo * 1_000 + entries.length;
      if (score < bestScore) {
        best = r.index;
        bestScore = score;
      }
    }
    return best;
  }

  private fit(t: Pick<Ticket<H>, 'req' | 'demand' | 'cls'>, r: ReplicaSnapshot): Fit {
    this.ledger.resize(r.index + 1);
    return this.flow.fit(this.ledger.replicas[r.index], candidate(t), r.kvUsage, this.nowMs);
  }

  private send(
    t: Ticket<H>,
    replica: number,
    replicas: readonly ReplicaSnapshot[],
    nowMs: Ms,
    leftWaiting: boolean,
  ): void {
    const account = this.ledger.replicas[replica];
    if (this.config.type === 'flow-control') {
      const f = this.fit(t, replicas.find((r) => r.index === replica) as ReplicaSnapshot);
      if (f.kind === 'slow') this.flow.chargeSlow(account, f, nowMs);
    }
    t.entry = {
      replica,
      promptTokens: t.req.inputTokens - t.demand.prefixHitTokens,
      kvTokens: t.demand.kvTokens,
      itlSloMs: t.cls.objectives.itlP99Ms ?? Infinity,
      lengths: t.lengths,
      capTokens: t.capTokens,
      expectTokens: Math.max(1, Math.min(t.capTokens, t.demand.output.p50)),
      streamed: 0,
      slowGaps: 0,
      slot: -1,
    };
    this.ledger.add(t.entry);
    this.noteWait(t, nowMs);
    t.replica = replica;
    t.dispatchedMs = nowMs;
    t.state = 'dispatched';
    this.account(t, nowMs);
    this.rate.record(nowMs, leftWaiting);
    if (t.long) this.longRate.record(nowMs, this.waiting.longWaitingTotal() > 0);
    this.sink.dispatch(t);
  }

  /** The contracts' account of a dispatch: its work, and whether a band above still had work. */
  private account(t: Ticket<H>, nowMs: Ms): void {
    const { inputWeight, outputWeight } = this.bandOrder.vtc.cost;
    const uncached = t.req.inputTokens - t.demand.prefixHitTokens;
    const work =
      inputWeight * uncached +
      outputWeight * Math.max(1, Math.min(t.capTokens, t.demand.output.p50));
    const p = t.band;
    // Deferred work also passes a higher class that is refusing requests for their wait.
    const passed =
      this.waiting.bands.some((b) => b.priority < p && b.queue.live > 0) ||
      (t.wasDeferred && this.bandOrder.pressedAbove?.(p, nowMs) === true);
    this.contracts.dispatched(p, t.cls.name, work, passed, nowMs);
  }
}

/** What flow control weighs of a request. */
function candidate(t: Pick<Ticket<unknown>, 'req' | 'demand' | 'cls'>): Candidate {
  return {
    promptTokens: t.req.inputTokens - t.demand.prefixHitTokens,
    kvTokens: t.demand.kvTokens,
    itlSloMs: t.cls.objectives.itlP99Ms ?? Infinity,
  };
}
