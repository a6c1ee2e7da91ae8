/**
 * The dispatcher: admitted requests wait in priority bands (`../queueing/bands.ts`; within a
 * band, by tenant fairness — virtual token counters — or FIFO, as the policy's `queueing.order`
 * says; band 0 is served first and a lower band waits while a higher one has work), deferred
 * ones in their own queue served only from leftover capacity. `pump` decides what leaves and
 * where — under the dispatch strategy (`strategies.ts`: at once, or under flow control) and the
 * policy's router (`../routing`) — and hands each decision (dispatch, hold, expire) to the
 * pipeline, which applies it to the ticket. A request that does not fit is passed by at most
 * `lookahead` younger ones, and the first such long prompt gets a replica held for it — no new
 * work goes there until it fits (`held-replicas.ts`) — so nothing starves behind smaller work.
 */
import type { DispatchConfig } from '../config/stage-schema.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';
import { ReplicaLedger, type LedgerEntry } from '../fleet/replica-ledger.ts';
import type { ReplicaSnapshot } from '../fleet/replica-snapshot.ts';
import type { Ticket } from '../queueing/ticket.ts';
import type { TicketQueue, WaitQueue } from '../queueing/ticket-queue.ts';
import { FairQueue } from '../queueing/fair-queue.ts';
import { ContractBook, type PassReason } from '../queueing/class-contract.ts';
import { WaitingBands, type Band, type BandOrder } from '../queueing/bands.ts';
import type { Ms } from '../request/units.ts';
import type { LlmRequest } from '../request/request.ts';
import { FILTERS } from '../routing/filters.ts';
import { candidateOf } from '../routing/flow-control.ts';
import type { RouteContext, RouteRequest, RouterSpec } from '../routing/route.ts';
import { Router, type RouterOptions } from '../routing/router.ts';
import { HeldReplicas } from './held-replicas.ts';
import { LedgerFeed } from './ledger-feed.ts';
import { dispatchStrategy, type DispatchStrategy } from './strategies.ts';
import { choicesOf, uncachedTokens } from '../request/demand.ts';

/** What the dispatcher decided, for the pipeline to apply: it alone writes a ticket. */
export type DispatchDecision<H> =
  /**
   * Send `ticket` to `replica`, whose cache is expected to hold `hitTokens` of its prompt;
   * `entry` is its account in the ledger, already added.
   */
  | {
      readonly kind: 'dispatch';
      readonly ticket: Ticket<H>;
      readonly replica: number;
      readonly hitTokens: number;
      readonly entry: LedgerEntry;
    }
  /** `replica` takes no new work until `ticket` (a long prompt that fits nowhere) fits there. */
  | { readonly kind: 'hold'; readonly ticket: Ticket<H>; readonly replica: number }
  /** `ticket` waited past its deadline and left the queue. */
  | { readonly kind: 'expire'; readonly ticket: Ticket<H> };

export class Dispatcher<H> {
  readonly ledger: ReplicaLedger;
  readonly strategy: DispatchStrategy;
  /** The priority bands and the deferred queue, and what the estimator may read of them. */
  readonly waiting: WaitingBands<H>;
  private readonly bandOrder: BandOrder;
  readonly router: Router;
  private readonly apply: (d: DispatchDecision<H>) => void;
  /** Replicas held for long prompts that fit nowhere yet. */
  readonly holds: HeldReplicas<H>;
  /** Reused by every scan of a queue. */
  private readonly scratch: Ticket<H>[] = [];
  /** What routing reads; `nowMs` moves with each pump. */
  private readonly route: RouteContext & { nowMs: Ms };
  private readonly spec: FleetSpec;
  /** The class contracts' judgement, shares and accounts. */
  readonly contracts = new ContractBook();
  /** Where the host's reports of its streams go: the ledger and each replica's pace. */
  readonly feed: LedgerFeed;

  /** Dispatches made ahead of a band with work waiting, by contract (`ContractBook.passes`). */
  get passes(): Readonly<Record<PassReason | 'priority', number>> {
    return this.contracts.passes;
  }

  /** Work dispatched per class over the run (`ContractBook.workByClass`). */
  get workByClass(): ReadonlyMap<string, number> {
    return this.contracts.workByClass;
  }

  get flow() {
    return this.strategy.flow;
  }

  constructor(
    config: DispatchConfig,
    bandOrder: BandOrder,
    spec: FleetSpec,
    router: RouterSpec,
    apply: (d: DispatchDecision<H>) => void,
    routerOptions: Omit<RouterOptions, 'leading'> = {},
  ) {
    this.spec = spec;
    this.strategy = dispatchStrategy(config, spec, router.pricesStalls === true);
    this.bandOrder = bandOrder;
    this.waiting = new WaitingBands(bandOrder, this.strategy.lookahead);
    this.router = new Router(router, {
      ...routerOptions,
      leading: this.strategy.filters,
      prefilledElsewhere: spec.prefilledElsewhere,
    });
    this.apply = apply;
    this.ledger = new ReplicaLedger(0);
    this.feed = new LedgerFeed(this.ledger, config, this.strategy.flow);
    this.holds = new HeldReplicas(this.ledger, spec.maxLoras);
    const index = this.router.prefix;
    this.route = {
      nowMs: 0,
      spec,
      ledger: this.ledger,
      flow: this.strategy.flow,
      hits: new Float64Array(0),
      heldFor: (replica) => this.holds.heldFor(replica),
      cachedBlocks: (replica) => index?.blocksOf(replica) ?? 0,
    };
  }

  /** Prompt tokens of `r` the best of `replicas` is expected to hold cached (0 without an index). */
  expectedHit(req: LlmRequest, replicas: readonly ReplicaSnapshot[]): number {
    return this.router.prefix === null ? 0 : this.router.bestHit(req, replicas, this.route);
  }

  /** A replica's engine cached (`stored`) or evicted (`removed`) a prefix block: the precise index. */
  kvEvent(replica: number, kind: 'stored' | 'removed', hash: string): void {
    const index = this.router.prefix;
    if (index?.mode !== 'precise') return;
    if (kind === 'stored') index.stored(replica, hash);
    else index.removed(replica, hash);
  }

  /** Whether `t` is a long prompt: its prefill alone would stall the streams next to it. */
  isLong(t: Ticket<H>): boolean {
    const itl = t.cls.objectives.itlP99Ms;
    return itl !== undefined && this.isLongPrompt(uncachedTokens(t.demand), itl, choicesOf(t.req));
  }

  /** `t` (its `long` set) joins its band. */
  enqueue(t: Ticket<H>): void {
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

  /**
   * Whether `r` would be placed at `nowMs` (not the last pump's time: a slow step opened then
   * takes only prompts placed in that instant), on a replica not held, were it at the front.
   */
  wouldFit(r: RouteRequest, replicas: readonly ReplicaSnapshot[], nowMs: Ms): boolean {
    this.route.nowMs = nowMs;
    this.router.prepare(r.req, replicas, this.route);
    let pool = replicas;
    for (const f of WOULD_FIT) {
      const out: ReplicaSnapshot[] = [];
      f.filter(r, pool, this.route, out);
      if (out.length === 0) return false;
      pool = out;
    }
    return true;
  }

  /** Whether some replica has room to hold `r` once its prefills are done (FlowControl.holds). */
  couldHold(r: RouteRequest, replicas: readonly ReplicaSnapshot[]): boolean {
    const c = candidateOf(r, r.demand.prefixHitTokens);
    for (const x of replicas) {
      this.ledger.resize(x.index + 1);
      if (this.flow.holds(this.ledger.replicas[x.index], c, x)) return true;
    }
    return false;
  }

  /** Whether a prompt is long next to streams of `itlSloMs` (its prefill takes most of a step). */
  isLongPrompt(promptTokens: number, itlSloMs: Ms, seqs = 1): boolean {
    return this.strategy.isLongPrompt(promptTokens, itlSloMs, seqs, this.ledger.replicas);
  }

  /**
   * Places what fits, oldest and most urgent first; drops what has expired. `admitDeferred`
   * re-decides a deferred ticket now that capacity is free (true: admitted, place it).
   */
  pump(nowMs: Ms, replicas: readonly ReplicaSnapshot[], admitDeferred: (t: Ticket<H>) => boolean) {
    this.route.nowMs = nowMs;
    this.strategy.flow.at(nowMs);
    this.ledger.resize(replicas.length === 0 ? 0 : replicas[replicas.length - 1].index + 1);
    const live = { replicas };
    // Contracts first: a band whose oldest request has starved, one under its reserved share,
    // one aged up to the front — each places what fits while its reason holds. A starved
    // deferred request goes too (admission still re-decides it).
    const bands = this.waiting.bands;
    const first = bands.find((b) => b.queue.live > 0);
    if (first !== undefined && this.strategy.contracts) {
      for (const b of bands) {
        const reason = this.passReason(b, first, nowMs);
        if (reason === null) continue;
        this.contracts.phase = reason;
        const oldestOnly = reason === 'starvation';
        this.pumpQueue(b.queue, nowMs, live, null, oldestOnly, () => {
          return this.passReason(b, first, nowMs) !== reason;
        });
      }
      const d = this.waiting.deferred.peek();
      const starve = d?.cls.contract.starvationMs;
      if (d !== undefined && starve !== undefined && nowMs - d.offeredMs >= starve) {
        this.contracts.phase = 'starvation';
        this.pumpQueue(this.waiting.deferred, nowMs, live, admitDeferred, true, () => {
          const h = this.waiting.deferred.peek();
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
    const head = this.waiting.deferred.peek();
    if (head !== undefined && this.bandOrder.pressedAbove?.(head.band, nowMs) === true) {
      return;
    }
    this.pumpQueue(this.waiting.deferred, nowMs, live, admitDeferred);
  }

  /** Which contract, if any, lets `b` go before `first` (the highest band with work) now. */
  private passReason(b: Band<H>, first: Band<H>, nowMs: Ms): PassReason | null {
    if (!ContractBook.binds(b.contract) || b === first || b.queue.live === 0) return null;
    const oldest = b.queue.oldest();
    const waited = oldest === undefined ? 0 : nowMs - oldest.offeredMs;
    return this.contracts.passReason(b, first.priority, waited, nowMs);
  }

  /**
   * Places from `queue` while something fits. `live.replicas` loses a replica on trial once it
   * has its one request. `oldestOnly`: only the queue's oldest member is a candidate (a starved one); `done`, asked
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
    const flow = this.strategy.flow;
    for (;;) {
      const replicas = live.replicas;
      let placed = false;
      const candidates = oldestOnly
        ? this.oldestOf(queue)
        : queue.collect(this.strategy.lookahead, this.scratch, nowMs);
      // Until a ticket is placed, the candidates are tried against unchanged accounts.
      flow.beginPass();
      try {
        for (const t of candidates) {
          if (t.expiresMs <= nowMs) {
            this.waiting.take(queue, t);
            this.apply({ kind: 'expire', ticket: t });
            placed = true;
            break;
          }
          const replica = replicas.length === 0 ? undefined : this.choose(t, replicas);
          if (replica !== undefined && (admitDeferred === null || admitDeferred(t))) {
            flow.endPass();
            this.waiting.take(queue, t);
            if (queue instanceof FairQueue) queue.dispatched(t, nowMs);
            this.send(t, replica, queue, nowMs);
            if (replica.probe === true) {
              live.replicas = replicas.filter((r) => r.index !== replica.index);
            }
            placed = true;
            break;
          }
          const held = this.holds.hold(t, replicas);
          if (held !== undefined) this.apply({ kind: 'hold', ticket: t, replica: held });
        }
      } finally {
        flow.endPass();
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

  /** The replica `t` goes to now, if any: the one held for it, else the router's pick. */
  private choose(t: Ticket<H>, replicas: readonly ReplicaSnapshot[]): ReplicaSnapshot | undefined {
    this.holds.prune();
    this.router.prepare(t.req, replicas, this.route);
    const pool = this.router.eligible(t, replicas, this.route);
    if (pool.length === 0) return undefined;
    // A request with a held replica goes there: the hold was for it.
    return this.holds.claim(t, pool) ?? this.router.pick(t, pool, this.route);
  }

  /** Accounts `t`'s dispatch to `replica` (ledger, rates, contracts), then hands it to the pipeline. */
  private send(
    t: Ticket<H>,
    replica: ReplicaSnapshot,
    from: WaitQueue<Ticket<H>>,
    nowMs: Ms,
  ): void {
    const account = this.ledger.replicas[replica.index];
    const hitTokens = this.route.hits[replica.index];
    this.strategy.placed(account, t, replica, hitTokens, nowMs);
    const promptTokens = t.req.inputTokens - hitTokens;
    const itlSloMs = t.cls.objectives.itlP99Ms ?? Infinity;
    const piece = this.flow.pieceOn(account, promptTokens, itlSloMs, choicesOf(t.req));
    // A staged prompt's blocks are cached piece by piece: indexed at its first token (pipeline).
    if (piece === 0) this.router.placed(t, replica.index);
    const entry: LedgerEntry = {
      replica: replica.index,
      promptTokens,
      ...(piece === 0 ? {} : { pieceTokens: piece }),
      kvTokens: t.demand.kvTokens,
      seqs: choicesOf(t.req),
      itlSloMs,
      lengths: t.lengths,
      capTokens: t.capTokens,
      expectTokens: Math.max(1, Math.min(t.capTokens, t.demand.output.p50)),
      adapter: t.req.adapter,
      streamed: 0,
      slowGaps: 0,
      lateGaps: 0,
      spanFromMs: 0,
      spanFromToken: 0,
      spanProfileMs: 0,
      slot: -1,
    };
    this.feed.placed(entry, nowMs);
    this.account(t, hitTokens, nowMs);
    this.waiting.dispatched(from, nowMs);
    this.apply({ kind: 'dispatch', ticket: t, replica: replica.index, hitTokens, entry });
  }

  /** The contracts' account of a dispatch: its work, and whether a band above still had work. */
  private account(t: Ticket<H>, hitTokens: number, nowMs: Ms): void {
    const { inputWeight, outputWeight } = this.bandOrder.vtc.cost;
    const uncached = t.req.inputTokens - hitTokens;
    const work =
      inputWeight * uncached +
      outputWeight * choicesOf(t.req) * Math.max(1, Math.min(t.capTokens, t.demand.output.p50));
    const p = t.band;
    // Deferred work also passes a higher class that is refusing requests for their wait.
    const passed =
      this.waiting.bands.some((b) => b.priority < p && b.queue.live > 0) ||
      (t.wasDeferred && this.bandOrder.pressedAbove?.(p, nowMs) === true);
    this.contracts.dispatched(p, t.cls.name, work, passed, nowMs);
  }
}

/** What "would it fit now" asks of a replica: not held for another, and flow control's fit. */
const WOULD_FIT = [FILTERS.held, FILTERS['flow-fit']];
