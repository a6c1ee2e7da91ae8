/**
 * Where admitted requests wait: priority bands (each a fair queue by tenant, or FIFO, as the
 * policy's `queueing.order` says; band 0 first, the admin lane before it) and the deferred
 * queue of leftover-capacity work. What the estimator reads of them — how many wait ahead of a
 * new request, since when the oldest waits, a tenant's own pace, whether lower work waits —
 * is answered here (`QueueView`), with how fast work leaves; the dispatcher decides what leaves.
 */
import type { Ms, Tokens } from '../request/units.ts';
import { NO_CONTRACT, type ClassContract } from '../request/slo-classes.ts';
import { FairQueue, type CandidateScore } from './fair-queue.ts';
import { ADMIN_BAND, type Ticket } from './ticket.ts';
import { TicketQueue, type WaitQueue } from './ticket-queue.ts';
import type { VirtualTokenCounters } from './virtual-token-counter.ts';
import { DispatchRate } from './dispatch-rate.ts';
import { uncachedTokens } from '../request/demand.ts';
import type { QueueView } from './queue-view.ts';

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

export interface Band<H> {
  readonly priority: number;
  readonly queue: WaitQueue<Ticket<H>>;
  /** The contract of the first class seen at this priority. */
  readonly contract: ClassContract;
  /** Long prompts among the queued: the rest pass them, so they do not count as ahead. */
  longWaiting: number;
  /** The prompt tokens those long prompts must prefill, together. */
  longTokens: Tokens;
}

export class WaitingBands<H> implements QueueView {
  /** By priority, highest (lowest number) first. */
  readonly bands: Band<H>[] = [];
  readonly deferred = new TicketQueue<Ticket<H>>();
  readonly rate = new DispatchRate();
  /** Deferred tickets by their band. */
  private readonly deferredAt = new Map<number, number>();
  private readonly order: BandOrder;
  /** How deep a band is looked into for a request that fits (the dispatcher's `lookahead`). */
  private readonly lookahead: number;

  constructor(order: BandOrder, lookahead: number) {
    this.order = order;
    this.lookahead = lookahead;
  }

  /** `t` joins its band (`t.long` already set). */
  enqueue(t: Ticket<H>): void {
    const band = this.bandOf(t);
    band.queue.push(t);
    if (t.long) {
      band.longWaiting++;
      band.longTokens += uncachedTokens(t.demand);
    }
  }

  /** `t` (marked deferred) joins the deferred queue. */
  defer(t: Ticket<H>): void {
    this.deferred.push(t);
    this.deferredAt.set(t.band, (this.deferredAt.get(t.band) ?? 0) + 1);
  }

  /** Takes `t` out of `queue` (its band's, or the deferred queue). */
  take(queue: WaitQueue<Ticket<H>>, t: Ticket<H>): void {
    if (queue === this.deferred) this.leaveDeferred(t);
    else this.leaveBand(t);
  }

  /**
   * A ticket taken out of `queue` was dispatched at `nowMs`: the rate counts it, as backlogged
   * while its queue still holds work.
   */
  dispatched(queue: WaitQueue<Ticket<H>>, nowMs: Ms): void {
    this.rate.record(nowMs, queue.live > 0);
  }

  /** Takes a waiting ticket out (its client gave up). */
  withdraw(t: Ticket<H>): void {
    if (!t.queued) return;
    if (t.state === 'deferred') this.leaveDeferred(t);
    else this.leaveBand(t);
  }

  /** Whether work of lower priority than `priority` waits, in a band or deferred. */
  lowerWaiting(priority: number): boolean {
    for (const b of this.bands) if (b.priority > priority && b.queue.live > 0) return true;
    for (const [p, n] of this.deferredAt) if (p > priority && n > 0) return true;
    return false;
  }

  /** Requests waiting, in the bands and deferred. */
  count(): number {
    let n = this.deferred.live;
    for (const b of this.bands) n += b.queue.live;
    return n;
  }

  hasWaiting(): boolean {
    if (this.deferred.live > 0) return true;
    for (const b of this.bands) if (b.queue.live > 0) return true;
    return false;
  }

  /** Every waiting ticket, bands first, then the deferred queue. */
  *tickets(): Generator<Ticket<H>> {
    for (const b of this.bands) yield* b.queue.scan(Infinity);
    yield* this.deferred.scan(Infinity);
  }

  /**
   * Requests waiting in bands served before or with `priority` that a new request would queue
   * behind: long prompts count only for another long prompt (the rest pass them). In its own
   * band, when the band is fair and the tenant is known, only those its tenant's counter lets
   * go first.
   */
  ahead(priority: number, long: boolean, tenant?: string): number {
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

  /** The mean prompt of the long prompts waiting in the bands of `priority` and above; 0: none. */
  longMeanTokens(priority: number): Tokens {
    let n = 0;
    let tokens = 0;
    for (const b of this.bands) {
      if (b.priority > priority) continue;
      n += b.longWaiting;
      tokens += b.longTokens;
    }
    return n === 0 ? 0 : tokens / n;
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

  before(priority: number, other: string, tenant: string): boolean {
    if (other === tenant) return true;
    const b = this.bands.find((x) => x.priority === priority);
    return !(b?.queue instanceof FairQueue) || b.queue.before(other, tenant);
  }

  /**
   * When the longest-waiting request in bands served before or with `priority` was offered,
   * long prompts aside (they wait for a replica of their own and others pass them), looking
   * `lookahead` deep into each band. In a fair band, with `tenant` given, only that tenant's own
   * oldest counts: the others' waits are not its own.
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

  private leaveDeferred(t: Ticket<H>): void {
    this.deferred.remove(t);
    this.deferredAt.set(t.band, (this.deferredAt.get(t.band) ?? 1) - 1);
  }

  private leaveBand(t: Ticket<H>): void {
    const band = this.bandOf(t);
    band.queue.remove(t);
    if (t.long) {
      band.longTokens = --band.longWaiting === 0 ? 0 : band.longTokens - uncachedTokens(t.demand);
    }
  }

  /** `t`'s band, made on first use (an admin-lane band has no contract). */
  private bandOf(t: Ticket<H>): Band<H> {
    const priority = t.band;
    let b = this.bands.find((x) => x.priority === priority);
    if (b === undefined) {
      const o = this.order;
      const queue: WaitQueue<Ticket<H>> =
        o.order === 'fifo'
          ? new TicketQueue()
          : new FairQueue(o.vtc, o.order === 'scored' ? o.score : undefined);
      const contract = priority === ADMIN_BAND ? NO_CONTRACT : t.cls.contract;
      b = { priority, queue, contract, longWaiting: 0, longTokens: 0 };
      this.bands.push(b);
      this.bands.sort((x, y) => x.priority - y.priority);
    }
    return b;
  }
}
