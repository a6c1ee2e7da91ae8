/**
 * The dispatcher's holds: which replicas take no new work because each waits for one request
 * that fits nowhere yet — a long prompt, or a LoRA adapter with no slot free — and which replica
 * to hold next. Holds are few — at most `MAX_HELD_RATIO` of the replicas, at least one — and a
 * hold lasts only while its ticket waits in a queue: it ends when the ticket is placed (there,
 * if the replica is eligible) or leaves.
 * This keeps the book and picks the replica; the dispatcher decides when to ask, and the `hold`
 * decision it hands the pipeline says what was held. Routing reads the holds through
 * `heldFor` (the `held` filter, `../routing/filters.ts`).
 */
import { hasAdapterSlot, type ReplicaLedger } from '../fleet/replica-ledger.ts';
import { servingOnly, type ReplicaSnapshot } from '../fleet/replica-snapshot.ts';
import type { Ticket } from '../queueing/ticket.ts';
import { gapsToSpare } from '../routing/gap-tolerance.ts';

/** At most this fraction of the replicas (and at least one) is held at once. */
const MAX_HELD_RATIO = 0.5;

/** A replica held for one waiting ticket. */
interface Hold<H> {
  readonly ticket: Ticket<H>;
  readonly replica: number;
}

export class HeldReplicas<H> {
  /**
   * A replica held back from new work for a request that fits nowhere (a long prompt that
   * would stall every stream it joins, or an adapter with every slot taken): with nothing new
   * arriving, its streams finish or grow tolerant, or an adapter's requests all end, and the
   * request goes there. One at a time, so capacity is never idled wholesale.
   */
  private held: Hold<H>[] = [];
  private readonly ledger: ReplicaLedger;
  /** Distinct LoRA adapters a replica's batch runs at once (vLLM's max_loras). */
  private readonly maxLoras: number;

  constructor(ledger: ReplicaLedger, maxLoras = 1) {
    this.ledger = ledger;
    this.maxLoras = maxLoras;
  }

  /** The ticket `replica` is held for, while it still waits. */
  heldFor(replica: number): Ticket<H> | undefined {
    for (const h of this.held) if (h.replica === replica && h.ticket.queued) return h.ticket;
    return undefined;
  }

  /** The most of `replicas` held at once. */
  atMost(replicas: number): number {
    return Math.max(1, Math.floor(replicas * MAX_HELD_RATIO));
  }

  /** Drops the holds whose tickets no longer wait (placed, expired or withdrawn). */
  prune(): void {
    if (this.held.length > 0) this.held = this.held.filter((h) => h.ticket.queued);
  }

  /**
   * Ends `t`'s hold, if it has one, and returns its held replica when that is in `pool` (the
   * replicas it may go to now): the hold was for it.
   */
  claim(t: Ticket<H>, pool: readonly ReplicaSnapshot[]): ReplicaSnapshot | undefined {
    const held = this.held.find((h) => h.ticket === t);
    if (held === undefined) return undefined;
    this.held = this.held.filter((h) => h !== held);
    return pool.find((r) => r.index === held.replica);
  }

  /**
   * A long prompt that fits nowhere, or a request whose adapter has no slot anywhere, gets a
   * replica held for it while holds are few: returns the replica now held for `t`, or undefined
   * when none is (neither of those, held already, or no room). With none left, a hold for a
   * request of a later band is `t`'s to take: that request waits while `t`'s band has work, so
   * the replica held for it would wait with it — and kept `t` out until both expired.
   */
  hold(t: Ticket<H>, replicas: readonly ReplicaSnapshot[]): number | undefined {
    // Only a replica that serves its adapter can take it: only such a one is held for it.
    const serving = servingOnly(replicas, t.req.adapter);
    const slotless = this.slotless(t, serving);
    if (!t.long && !slotless) return undefined;
    if (this.held.some((h) => h.ticket === t)) return undefined;
    if (this.held.length >= this.atMost(replicas.length)) {
      let latest: Hold<H> | undefined;
      for (const h of this.held) if (h.ticket.band > (latest?.ticket.band ?? t.band)) latest = h;
      if (latest === undefined) return undefined;
      this.held = this.held.filter((h) => h !== latest);
    }
    const free = serving.filter((r) => !this.held.some((h) => h.replica === r.index));
    if (free.length === 0) return undefined;
    const replica = slotless ? this.soonestSlot(free) : this.leastCommitted(free);
    this.held.push({ ticket: t, replica });
    return replica;
  }

  /**
   * Whether `t` runs with a LoRA adapter that none of `replicas` (those serving it) has in
   * flight and each of whose batches has all its adapter slots taken: it fits nowhere until one
   * of those adapters leaves a replica, which new work of theirs would put off for ever.
   */
  private slotless(t: Ticket<H>, replicas: readonly ReplicaSnapshot[]): boolean {
    const adapter = t.req.adapter;
    if (adapter === undefined) return false;
    const accounts = this.ledger.replicas;
    return replicas.every((r) => !hasAdapterSlot(accounts[r.index], adapter, this.maxLoras));
  }

  /** The replica where an adapter slot frees soonest (`ReplicaLedger.stepsUntilAdapterSlot`). */
  private soonestSlot(replicas: readonly ReplicaSnapshot[]): number {
    let best = replicas[0].index;
    let bestSteps = Infinity;
    for (const r of replicas) {
      const steps = this.ledger.stepsUntilAdapterSlot(r.index);
      if (steps < bestSteps) {
        best = r.index;
        bestSteps = steps;
      }
    }
    return best;
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
}
