// Tests for HeldReplicas (held-replicas.ts): which replicas are held for long prompts, for how long.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HeldReplicas } from './held-replicas.ts';
import { ReplicaLedger, type LedgerEntry } from '../fleet/replica-ledger.ts';
import type { ReplicaSnapshot } from '../fleet/replica-snapshot.ts';
import type { Ticket } from '../queueing/ticket.ts';

/** What the book reads of a ticket: whether it is long, its adapter, and whether it still waits. */
function ticket(long = true, adapter?: string, band = 0): Ticket<string> {
  return { long, queued: true, req: { adapter }, band } as unknown as Ticket<string>;
}

function replicas(n: number): ReplicaSnapshot[] {
  return Array.from({ length: n }, (_, index) => ({ index }) as ReplicaSnapshot);
}

function stream(replica: number, streamed: number, adapter?: string): LedgerEntry {
  return {
    replica,
    promptTokens: 100,
    kvTokens: 200,
    seqs: 1,
    itlSloMs: 80,
    lengths: undefined,
    capTokens: 1_000,
    expectTokens: 500,
    adapter,
    streamed,
    slowGaps: 0,
    lateGaps: 0,
    spanFromMs: 0,
    spanFromToken: 0,
    spanProfileMs: 0,
    slot: -1,
  };
}

test('a long prompt gets the replica whose streams can spare a stall soonest; short ones get none', () => {
  const ledger = new ReplicaLedger(3);
  // 102 streamed tokens spare one slow gap: replica 1's stream is nearly there, 0's and 2's are not.
  for (const e of [stream(0, 10), stream(1, 100), stream(2, 0)]) ledger.add(e);
  const holds = new HeldReplicas<string>(ledger);
  const pool = replicas(3);
  assert.equal(holds.hold(ticket(false), pool), undefined, 'not long: nothing held');
  const t = ticket();
  assert.equal(holds.hold(t, pool), 1);
  assert.equal(holds.heldFor(1), t);
  assert.equal(holds.hold(t, pool), undefined, 'one hold per ticket');
});

test('at most half the replicas (at least one) are held at once, each for one ticket', () => {
  const holds = new HeldReplicas<string>(new ReplicaLedger(5));
  const pool = replicas(5);
  const held = [ticket(), ticket(), ticket()].map((t) => holds.hold(t, pool));
  assert.equal(held[2], undefined, 'two of five: the third waits');
  assert.notEqual(held[0], held[1], 'a replica is held for one ticket');
  const single = new HeldReplicas<string>(new ReplicaLedger(1));
  assert.equal(single.hold(ticket(), replicas(1)), 0, 'one replica: it may be held');
});

test('a hold ends when its ticket is placed (there, if that replica may take it) or stops waiting', () => {
  const holds = new HeldReplicas<string>(new ReplicaLedger(4));
  const pool = replicas(4);
  const a = ticket();
  const b = ticket();
  const ra = holds.hold(a, pool) as number;
  const rb = holds.hold(b, pool) as number;
  assert.equal(holds.claim(a, pool)?.index, ra, 'placed on the replica held for it');
  assert.equal(holds.heldFor(ra), undefined);
  assert.equal(holds.claim(a, pool), undefined, 'claimed once');
  // b's replica is not among those it may go to now: the hold ends, the router picks.
  assert.equal(
    holds.claim(
      b,
      pool.filter((r) => r.index !== rb),
    ),
    undefined,
  );
  assert.equal(holds.heldFor(rb), undefined);
  // A ticket that left the queue (placed elsewhere, expired, withdrawn) frees its replica.
  const c = ticket();
  const rc = holds.hold(c, pool) as number;
  (c as { queued: boolean }).queued = false;
  assert.equal(holds.heldFor(rc), undefined, 'routing no longer sees it held');
  holds.prune();
  assert.notEqual(holds.hold(ticket(), pool), undefined, 'its place is free again');
});

/**
 * Replicas 0 and 1 each running two adapters: 0's b ends last at 500 − 300 = 200 tokens to go,
 * 1's d at 500 − 450 = 50, so 1 frees a slot first.
 */
function twoAdaptersEach(n: number): ReplicaLedger {
  const ledger = new ReplicaLedger(n);
  const running = [
    stream(0, 0, 'a'),
    stream(0, 300, 'b'),
    stream(1, 100, 'c'),
    stream(1, 450, 'd'),
  ];
  for (const e of running) ledger.add(e);
  return ledger;
}

test('a request whose adapter finds no slot anywhere gets the replica where a slot frees soonest', () => {
  // Two slots each, all taken.
  const ledger = twoAdaptersEach(2);
  ledger.add(stream(1, 0, 'c'));
  const holds = new HeldReplicas<string>(ledger, 2);
  const pool = replicas(2);
  assert.equal(holds.hold(ticket(false, 'a'), pool), undefined, 'its adapter runs on replica 0');
  assert.equal(holds.hold(ticket(false), pool), undefined, 'the base model needs no slot');
  assert.equal(holds.hold(ticket(false, 'e'), pool), 1);
  // With a third slot the request fits somewhere as it is: nothing to hold.
  const three = new HeldReplicas<string>(ledger, 3);
  assert.equal(three.hold(ticket(false, 'e'), pool), undefined);
});

test('only a replica that serves the adapter is weighed, or held, for a request without a slot', () => {
  // Replicas 0 and 1 load e, and their slots are taken (max_loras 2). Replica 2 does not load
  // e, and its slots are free: it must neither count as a slot nor be held.
  const holds = new HeldReplicas<string>(twoAdaptersEach(3), 2);
  const pool = replicas(3).map((r) => ({ ...r, servable: r.index === 2 ? ['a'] : ['e'] }));
  assert.equal(holds.hold(ticket(false, 'e'), pool), 1);
});

test('with every hold taken, a long prompt of an earlier band takes the hold of the latest', () => {
  const holds = new HeldReplicas<string>(new ReplicaLedger(4));
  const pool = replicas(4);
  // Two of four held, for bands 2 and 3 (batch, best effort).
  const [batch, bestEffort] = [ticket(true, undefined, 2), ticket(true, undefined, 3)];
  const held = [holds.hold(batch, pool), holds.hold(bestEffort, pool)];
  // Another of band 3 finds none; one of band 0 takes best effort's: that one waits while band 0
  // has work, and the replica held for it would wait with it.
  assert.equal(holds.hold(ticket(true, undefined, 3), pool), undefined);
  const interactive = ticket(true, undefined, 0);
  const taken = holds.hold(interactive, pool);
  assert.notEqual(taken, undefined);
  assert.equal(holds.heldFor(taken!), interactive);
  assert.equal(holds.heldFor(held[0]!), batch, 'the earlier of the two keeps its hold');
  assert.notEqual(holds.heldFor(held[1]!), bestEffort, 'best effort lost its hold');
  assert.equal(holds.hold(bestEffort, pool), undefined, 'and, of the latest band, finds none');
});
