/**
 * A band's queue ordered by tenant fairness: one FIFO per tenant, and the tenants taken in the
 * order virtual token counters say (./virtual-token-counter.ts) — the backlogged tenant with the
 * smallest counter first. `collect` lists candidates in the order VTC would serve them if each
 * cost what it is expected to: the smallest counter's head, that counter advanced by the head's
 * expected charge, and so on. Within a tenant, oldest first.
 */
import { TicketQueue, type Queued, type WaitQueue } from './ticket-queue.ts';
import type { VirtualTokenCounters } from './virtual-token-counter.ts';

/**
 * How far past an urgent member's turn (in its own expected charges) others may be listed to
 * pass it while it waits for room.
 */
const PASS_WINDOW = 2;
/** A member is urgent once it has waited this share of the time it may wait. */
const URGENT_SHARE = 0.1;

/** What the fair queue reads of a member. */
export interface FairMember extends Queued {
  readonly req: { readonly tenant: string };
  readonly cls: {
    readonly objectives: { readonly itlP99Ms?: number };
    readonly contract: { readonly starvationMs?: number };
  };
  readonly demand: { readonly prefillMs: number };
  /** A long prompt: others pass it while it waits for a replica of its own. */
  readonly long: boolean;
  readonly offeredMs: number;
  /** Past this it leaves the queue unserved. */
  readonly expiresMs: number;
  /** Its expected charge to its tenant's counter (weighted tokens over weight), set when queued. */
  queueCost: number;
}

interface TenantQueue<T extends FairMember> {
  readonly tenant: string;
  readonly queue: TicketQueue<T>;
  /** Sum of the queued members' `queueCost`. */
  cost: number;
  /** Reused by `collect`. */
  readonly scratch: T[];
  /** When its last member was dispatched, and the mean gap between its dispatches while backlogged. */
  lastDispatchMs: number;
  gapMs: number;
  gaps: number;
  /** Whether members were left queued at its last dispatch: only then does the next gap count. */
  wasBacklogged: boolean;
}

/**
 * The weights of `order: scored` (policy `queueing.score`): a candidate's score is
 * virtual_service × (its VTC tag − the lowest tag listed) ÷ the mean expected charge listed
 * − urgency × (share of its allowed wait already waited) − age × (waited ÷ its class's starvation
 * bound, or 60 s) + interference × (its prefill ms ÷ its class's ITL objective, or 80 ms).
 * Lowest first. The terms are in "requests' worth of service", so urgency 4 lets a request at
 * its deadline go before four requests' worth of less-served tenants.
 */
export interface CandidateScore {
  readonly virtualService: number;
  readonly urgency: number;
  readonly age: number;
  readonly interference: number;
}

const AGE_REFERENCE_MS = 60_000;
const ITL_REFERENCE_MS = 80;

/** Weight of the newest gap in a tenant's mean dispatch gap (an EWMA over ~10 dispatches). */
const GAP_EWMA = 0.1;

export class FairQueue<T extends FairMember> implements WaitQueue<T> {
  private readonly vtc: VirtualTokenCounters;
  private readonly tenants = new Map<string, TenantQueue<T>>();
  /** Tenants with members queued, in the order they became backlogged. */
  private readonly backlogged: TenantQueue<T>[] = [];
  live = 0;
  /** Reused by `collect`: each backlogged tenant's running tag and next candidate. */
  private readonly tags: number[] = [];
  private readonly next: number[] = [];

  private readonly score: CandidateScore | undefined;

  /** `score`: order candidates by the weighted score (`order: scored`) instead of VTC tags alone. */
  constructor(vtc: VirtualTokenCounters, score?: CandidateScore) {
    this.vtc = vtc;
    this.score = score;
  }

  push(t: T): void {
    const q = this.of(t.req.tenant);
    if (q.queue.live === 0) {
      this.vtc.backlog(q.tenant);
      this.backlogged.push(q);
    }
    q.queue.push(t);
    q.cost += t.queueCost;
    this.live++;
  }

  remove(t: T): void {
    const q = this.of(t.req.tenant);
    q.queue.remove(t);
    q.cost -= t.queueCost;
    this.live--;
    if (q.queue.live === 0) {
      q.cost = 0;
      this.vtc.idle(q.tenant);
      this.backlogged.splice(this.backlogged.indexOf(q), 1);
    }
  }

  /**
   * Up to `limit` members in the order they are expected to be served, into `out`. With
   * `nowMs`, a member that has waited a quarter of what it may (`URGENT_SHARE`) and is not a
   * long prompt closes the list soon after it (`PASS_WINDOW`): members of tenants far ahead in
   * service may not pass it while it waits for room. (Long prompts wait for a replica of their
   * own and are passed by design: ../dispatch/README.md.) Before that, anything listed may pass
   * a member that does not fit: the fleet stays busy.
   */
  collect(limit: number, out: T[], nowMs = -Infinity): T[] {
    out.length = 0;
    const b = this.backlogged;
    if (this.score !== undefined) return this.collectScored(limit, out, nowMs, this.score);
    if (b.length === 1) return b[0].queue.collect(limit, out);
    const { tags, next } = this;
    tags.length = 0;
    next.length = 0;
    for (const q of b) {
      q.queue.collect(limit, q.scratch);
      tags.push(this.vtc.counter(q.tenant));
      next.push(0);
    }
    let windowEnd = Infinity;
    while (out.length < limit) {
      let best = -1;
      for (let i = 0; i < b.length; i++) {
        if (next[i] < b[i].scratch.length && (best < 0 || tags[i] < tags[best])) best = i;
      }
      if (best < 0 || tags[best] > windowEnd) break;
      const t = b[best].scratch[next[best]++];
      if (windowEnd === Infinity && !t.long && urgent(t, nowMs)) {
        windowEnd = tags[best] + PASS_WINDOW * t.queueCost;
      }
      tags[best] += t.queueCost;
      out.push(t);
    }
    return out;
  }

  /**
   * `order: scored`: each tenant's first `limit` members with their VTC tags, scored
   * (`CandidateScore`, formula in ./README.md), lowest first; ties by arrival.
   */
  private collectScored(limit: number, out: T[], nowMs: number, w: CandidateScore): T[] {
    const scored = this.scoredScratch;
    scored.length = 0;
    let minTag = Infinity;
    let cost = 0;
    for (const q of this.backlogged) {
      let tag = this.vtc.counter(q.tenant);
      for (const t of q.queue.collect(limit, q.scratch)) {
        scored.push({ t, score: tag });
        if (tag < minTag) minTag = tag;
        cost += t.queueCost;
        tag += t.queueCost;
      }
    }
    if (scored.length === 0) return out;
    const mean = cost > 0 ? cost / scored.length : 1;
    for (const c of scored) {
      const t = c.t;
      const waited = Number.isFinite(nowMs) ? Math.max(0, nowMs - t.offeredMs) : 0;
      const allowed = t.expiresMs - t.offeredMs;
      const urgency = allowed > 0 && Number.isFinite(allowed) ? Math.min(1, waited / allowed) : 0;
      const age = waited / (t.cls.contract.starvationMs ?? AGE_REFERENCE_MS);
      const interference = t.demand.prefillMs / (t.cls.objectives.itlP99Ms ?? ITL_REFERENCE_MS);
      c.score =
        (w.virtualService * (c.score - minTag)) / mean -
        w.urgency * urgency -
        w.age * age +
        w.interference * interference;
    }
    scored.sort((x, y) => x.score - y.score || x.t.offeredMs - y.t.offeredMs);
    for (let i = 0; i < scored.length && out.length < limit; i++) out.push(scored[i].t);
    return out;
  }

  private readonly scoredScratch: { t: T; score: number }[] = [];

  *scan(limit: number): Generator<T> {
    yield* this.collect(Math.min(limit, this.live), []);
  }

  peek(): T | undefined {
    return this.collect(1, [])[0];
  }

  /** The oldest head among the tenants' queues. */
  oldest(): T | undefined {
    let oldest: T | undefined;
    for (const q of this.backlogged) {
      const head = q.queue.peek();
      if (head !== undefined && (oldest === undefined || head.offeredMs < oldest.offeredMs)) {
        oldest = head;
      }
    }
    return oldest;
  }

  /**
   * About how many of the queued would be served before a new member of `tenant`: all of its
   * own tenant's, and of each other tenant those whose turn comes before its counter, past its
   * own queue, reaches theirs (each other tenant's members taken at their mean expected cost).
   */
  ahead(tenant: string): number {
    const own = this.tenants.get(tenant);
    const start = this.startOf(tenant) + (own?.cost ?? 0);
    let n = own?.queue.live ?? 0;
    for (const q of this.backlogged) {
      if (q === own) continue;
      const gap = start - this.vtc.counter(q.tenant);
      if (gap <= 0) continue;
      const mean = q.cost / q.queue.live;
      n += mean > 0 ? Math.min(q.queue.live, Math.ceil(gap / mean)) : q.queue.live;
    }
    return n;
  }

  /**
   * `t` was dispatched at `nowMs` (after `remove`): while its tenant stays backlogged, the gaps
   * between its dispatches measure the share of the fleet the fair order gives it.
   */
  dispatched(t: T, nowMs: number): void {
    const q = this.of(t.req.tenant);
    if (q.wasBacklogged) {
      const gap = nowMs - q.lastDispatchMs;
      q.gapMs = q.gaps === 0 ? gap : q.gapMs + GAP_EWMA * (gap - q.gapMs);
      q.gaps++;
    }
    q.lastDispatchMs = nowMs;
    q.wasBacklogged = q.queue.live > 0;
  }

  /**
   * How long a new member of `tenant` waits at its tenant's own pace: its queued members and it,
   * one measured dispatch gap each; undefined while it has none queued or no gap is measured.
   */
  tenantPaceMs(tenant: string): number | undefined {
    const q = this.tenants.get(tenant);
    // Alone in the band, its pace is the band's: the queue model already has it.
    if (q === undefined || q.queue.live === 0 || q.gaps === 0 || this.backlogged.length < 2) {
      return undefined;
    }
    // A tenant whose counter is within its own queued work of the floor is next in the fair
    // order once that work goes: the queue model's count ahead already says when.
    if (this.vtc.counter(tenant) <= this.vtc.floor() + q.cost) return undefined;
    return (q.queue.live + 1) * q.gapMs;
  }

  /** Whether a new member of `other` goes before a new one of `tenant` in the fair order. */
  before(other: string, tenant: string): boolean {
    return this.startOf(other) <= this.startOf(tenant);
  }

  /** Where a new member of `tenant` starts in the fair order: its counter, or the floor if idle. */
  private startOf(tenant: string): number {
    const counter = this.vtc.counter(tenant);
    return (this.tenants.get(tenant)?.queue.live ?? 0) > 0
      ? counter
      : Math.max(counter, this.vtc.floor());
  }

  /** The oldest member of `tenant` still queued, if any. */
  headOf(tenant: string): T | undefined {
    return this.tenants.get(tenant)?.queue.peek();
  }

  private of(tenant: string): TenantQueue<T> {
    let q = this.tenants.get(tenant);
    if (q === undefined) {
      q = {
        tenant,
        queue: new TicketQueue(),
        cost: 0,
        scratch: [],
        lastDispatchMs: 0,
        gapMs: 0,
        gaps: 0,
        wasBacklogged: false,
      };
      this.tenants.set(tenant, q);
    }
    return q;
  }
}

function urgent(t: FairMember, nowMs: number): boolean {
  return nowMs - t.offeredMs >= URGENT_SHARE * (t.expiresMs - t.offeredMs);
}
