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
import { ADMIN_BAND, type Ticket } from '../queueing/ticket.ts';
import { TicketQueue, type WaitQueue } from '../queueing/ticket-queue.ts';
import { FairQueue, type CandidateScore } from '../queueing/fair-queue.ts';
import type { VirtualTokenCounters } from '../queueing/virtual-token-counter.ts';
import {
  NO_CONTRACT,
  ShareMeter,
  type ClassContract,
  type PassReason,
} from '../queueing/class-contract.ts';
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

/** How a band orders its queue, and the counters that order it by tenant. */
export interface BandOrder {
  readonly order: 'vtc' | 'scored' | 'fifo';
  /** The candidate score's weights, for `scored`. */
  readonly score?: CandidateScore;
  readonly vtc: VirtualTokenCounters;
  /**
   * Whether a class of higher priority than `priority` is refusing requests for their wait at
   * `nowMs` (its queue-delay control is in force): capacity is then not leftover.
   */
  readonly pressedAbove?: (priority: number, nowMs: Ms) => boolean;
}

interface Band<H> {
  readonly priority: number;
  readonly queue: WaitQueue<Ticket<H>>;
  /** The contract of the first class seen at this priority. */
  readonly contract: ClassContract;
  /** Long prompts among the queued: the rest pass them, so they do not count as ahead. */
  longWaiting: number;
}

export class Dispatcher<H> {
  readonly ledger: ReplicaLedger;
  readonly flow: FlowControl;
  readonly rate = new DispatchRate();
  /** The same for long prompts alone, which pass through held replicas at their own pace. */
  readonly longRate = new DispatchRate();
  readonly deferred = new TicketQueue<Ticket<H>>();
  /** Deferred tickets by their class's priority. */
  private readonly deferredAt = new Map<number, number>();
  private readonly bands: Band<H>[] = [];
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
  /** Work dispatched per band, for the class contracts' shares. */
  readonly shares = new ShareMeter();
  /** Work dispatched per class over the whole run (weighted tokens expected). */
  readonly workByClass = new Map<string, number>();
  /**
   * Dispatches made while a band of higher priority had work waiting, by the contract that
   * allowed it; `priority` counts those no contract allowed (priority inversions: none expected).
   */
  readonly passes: Record<PassReason | 'priority', number> = {
    starvation: 0,
    min_share: 0,
    aging: 0,
    max_share: 0,
    priority: 0,
  };
  /** The contract the pump is applying while it places (null: strict priority). */
  private phase: PassReason | null = null;

  constructor(
    config: DispatchConfig,
    bandOrder: BandOrder,
    spec: FleetSpec,
    router: Router,
    sink: DispatchSink<H>,
  ) {
    this.config = config;
    this.bandOrder = bandOrder;
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
    const band = this.band(t.band, t.band === ADMIN_BAND ? NO_CONTRACT : t.cls.contract);
    band.queue.push(t);
    if (t.long) band.longWaiting++;
  }

  defer(t: Ticket<H>): void {
    t.state = 'deferred';
    t.wasDeferred = true;
    this.deferred.push(t);
    this.deferredAt.set(t.band, (this.deferredAt.get(t.band) ?? 0) + 1);
  }

  /** Whether work of lower priority than `priority` waits, in a band or deferred. */
  lowerWaiting(priority: number): boolean {
    for (const b of this.bands) if (b.priority > priority && b.queue.live > 0) return true;
    for (const [p, n] of this.deferredAt) if (p > priority && n > 0) return true;
    return false;
  }

  hasWaiting(): boolean {
    if (this.deferred.live > 0) return true;
    for (const b of this.bands) if (b.queue.live > 0) return true;
    return false;
  }

  /** Every waiting ticket, bands first, then the deferred queue. */
  *waitingTickets(): Generator<Ticket<H>> {
    for (const b of this.bands) yield* b.queue.scan(Infinity);
    yield* this.deferred.scan(Infinity);
  }

  /** Takes a waiting ticket out (its client gave up). */
  withdraw(t: Ticket<H>): void {
    if (!t.queued) return;
    if (t.state === 'deferred') this.leaveDeferred(t);
    else this.leaveBand(t);
  }

  /**
   * Requests waiting in bands served before or with `priority` that a new request would queue
   * behind: long prompts count only for another long prompt (the rest pass them). In its own
   * band, when the band is fair and the tenant is known, only those its tenant's counter lets
   * go first.
   */
  waitingAhead(priority: number, long: boolean, tenant?: string): number {
    let n = 0;
    for (const b of this.bands) {
      if (b.priority > priority) continue;
      let ahead = long ? b.longWaiting : b.queue.live - b.longWaiting;
      if (b.priority === priority && tenant !== undefined && b.queue instanceof FairQueue) {
        ahead = Math.min(ahead, b.queue.ahead(tenant));
      }
      n += ahead;
    }
    return n;
  }

  private longWaitingTotal(): number {
    let n = 0;
    for (const b of this.bands) n += b.longWaiting;
    return n;
  }

  private take(queue: WaitQueue<Ticket<H>>, t: Ticket<H>): void {
    if (queue === this.deferred) this.leaveDeferred(t);
    else this.leaveBand(t);
  }

  private leaveDeferred(t: Ticket<H>): void {
    this.deferred.remove(t);
    this.deferredAt.set(t.band, (this.deferredAt.get(t.band) ?? 1) - 1);
  }

  private leaveBand(t: Ticket<H>): void {
    const band = this.band(t.band, t.band === ADMIN_BAND ? NO_CONTRACT : t.cls.contract);
    band.queue.remove(t);
    if (t.long) band.longWaiting--;
  }

  /**
   * A new request of `tenant` in the band of `priority` waits at least its tenant's own pace
   * when the band is fair and the tenant has work queued there (`FairQueue.tenantPaceMs`).
   */
  tenantPaceMs(priority: number, tenant: string): Ms | undefined {
    const b = this.bands.find((x) => x.priority === priority);
    return b !== undefined && b.queue instanceof FairQueue
      ? b.queue.tenantPaceMs(tenant)
      : undefined;
  }

  /**
   * When the longest-waiting request in bands served before or with `priority` was offered,
   * long prompts aside: they wait for a replica of their own and others pass them. In a fair
   * band, with `tenant` given, only that tenant's own oldest counts: the others' waits are not
   * its own.
   */
  oldestOfferedMs(priority: number, tenant?: string): Ms {
    let oldest = Infinity;
    for (const b of this.bands) {
      if (b.priority > priority) continue;
      if (b.priority === priority && tenant !== undefined && b.queue instanceof FairQueue) {
        const head = b.queue.headOf(tenant);
        if (head !== undefined && !head.long && head.offeredMs < oldest) oldest = head.offeredMs;
        continue;
      }
      for (const t of b.queue.scan(this.lookahead)) {
        if (t.long) continue;
        if (t.offeredMs < oldest) oldest = t.offeredMs;
        break;
      }
    }
    return oldest;
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
    const first = this.bands.find((b) => b.queue.live > 0);
    if (first !== undefined && this.config.type !== 'immediate') {
      for (const b of this.bands) {
        const reason = this.passReason(b, first, nowMs);
        if (reason === null) continue;
        this.phase = reason;
        const oldestOnly = reason === 'starvation';
        this.pumpQueue(b.queue, nowMs, live, null, oldestOnly, () => {
          return this.passReason(b, first, nowMs) !== reason;
        });
      }
      const d = this.deferred.peek();
      const starve = d?.cls.contract.starvationMs;
      if (d !== undefined && starve !== undefined && nowMs - d.offeredMs >= starve) {
        this.phase = 'starvation';
        this.pumpQueue(this.deferred, nowMs, live, admitDeferred, true, () => {
          const h = this.deferred.peek();
          return h === undefined || nowMs - h.offeredMs < (h.cls.contract.starvationMs ?? Infinity);
        });
      }
    }
    // Then strict priority: a lower band waits while a higher one has work — except that a band
    // past its maximum share yields to the others with work, and gets what is left after them.
    let yielded: Band<H>[] | null = null;
    for (const b of this.bands) {
      if (b.queue.live === 0) continue;
      if (this.overMax(b, nowMs) && this.bands.some((o) => o !== b && o.queue.live > 0)) {
        (yielded ??= []).push(b);
        continue;
      }
      this.phase = yielded === null ? null : 'max_share';
      this.pumpQueue(b.queue, nowMs, live, null);
      if (b.queue.live > 0) {
        this.phase = null;
        return;
      }
    }
    this.phase = null;
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
    const c = b.contract;
    if (c.minShare === 0 && c.starvationMs === undefined && c.agingMs === undefined) return null;
    if (b === first || b.queue.live === 0) return null;
    const oldest = b.queue.oldest();
    const waited = oldest === undefined ? 0 : nowMs - oldest.offeredMs;
    if (c.starvationMs !== undefined && waited >= c.starvationMs) return 'starvation';
    if (c.minShare > 0 && this.shares.share(b.priority, nowMs) < c.minShare) return 'min_share';
    if (c.agingMs !== undefined && b.priority - Math.floor(waited / c.agingMs) <= first.priority) {
      return 'aging';
    }
    return null;
  }

  private overMax(b: Band<H>, nowMs: Ms): boolean {
    return b.contract.maxShare < 1 && this.shares.share(b.priority, nowMs) > b.contract.maxShare;
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
          this.take(queue, t);
          this.noteWait(t, nowMs);
          this.sink.expire(t);
          placed = true;
          break;
        }
        const replica = replicas.length === 0 ? -1 : this.choose(t, replicas);
        if (replica >= 0 && (admitDeferred === null || admitDeferred(t))) {
          this.take(queue, t);
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
    this.bandOrder.vtc.chargeInput(t.req.tenant, t.req.inputTokens, t.demand.prefixHitTokens);
    this.noteWait(t, nowMs);
    t.replica = replica;
    t.dispatchedMs = nowMs;
    t.state = 'dispatched';
    this.account(t, nowMs);
    this.rate.record(nowMs, leftWaiting);
    if (t.long) this.longRate.record(nowMs, this.longWaitingTotal() > 0);
    this.sink.dispatch(t);
  }

  /** The share meter's work, and whether a band above still had work waiting (and why). */
  private account(t: Ticket<H>, nowMs: Ms): void {
    const { inputWeight, outputWeight } = this.bandOrder.vtc.cost;
    const uncached = t.req.inputTokens - t.demand.prefixHitTokens;
    const work =
      inputWeight * uncached +
      outputWeight * Math.max(1, Math.min(t.capTokens, t.demand.output.p50));
    this.shares.add(t.band, work, nowMs);
    this.workByClass.set(t.cls.name, (this.workByClass.get(t.cls.name) ?? 0) + work);
    const p = t.band;
    // Deferred work also passes a higher class that is refusing requests for their wait.
    const passed =
      this.bands.some((b) => b.priority < p && b.queue.live > 0) ||
      (t.wasDeferred && this.bandOrder.pressedAbove?.(p, nowMs) === true);
    if (passed) this.passes[this.phase ?? 'priority']++;
  }

  private band(priority: number, contract: ClassContract): Band<H> {
    let b = this.bands.find((x) => x.priority === priority);
    if (b === undefined) {
      const queue: WaitQueue<Ticket<H>> =
        this.bandOrder.order === 'fifo'
          ? new TicketQueue()
          : new FairQueue(
              this.bandOrder.vtc,
              this.bandOrder.order === 'scored' ? this.bandOrder.score : undefined,
            );
      b = { priority, queue, contract, longWaiting: 0 };
      this.bands.push(b);
      this.bands.sort((x, y) => x.priority - y.priority);
    }
    return b;
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
