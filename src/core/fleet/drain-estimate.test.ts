// Tests for ReplicaLedger.stepsUntilEnded (replica-ledger.ts): how long until k running requests
// end, and until a replica frees an adapter slot; and its mean pace.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ReplicaLedger, hasAdapterSlot, type LedgerEntry } from './replica-ledger.ts';
import { SortedWindow } from '../stats/sorted-window.ts';

function running(replica: number, expectTokens: number, streamed: number, capTokens = 1_000) {
  const e: LedgerEntry = {
    replica,
    promptTokens: 100,
    kvTokens: 200,
    seqs: 1,
    itlSloMs: 80,
    lengths: undefined,
    capTokens,
    expectTokens,
    streamed: 0,
    slowGaps: 0,
    lateGaps: 0,
    spanFromMs: 0,
    spanFromToken: 0,
    spanProfileMs: 0,
    slot: -1,
  };
  return { e, streamed };
}

test('drain estimate: nothing running is Infinity; else the k-th soonest end, over replicas', () => {
  const d = new ReplicaLedger(2);
  assert.equal(d.stepsUntilEnded(1, 0), Infinity);
  for (const { e, streamed } of [running(0, 100, 90), running(1, 50, 10), running(0, 300, 100)]) {
    d.add(e);
    e.streamed = streamed;
  }
  // To go: 10, 40, 200 steps.
  assert.equal(d.stepsUntilEnded(1, 1), 10);
  assert.equal(d.stepsUntilEnded(2, 1), 40);
  assert.equal(d.stepsUntilEnded(3, 1), 200);
  assert.equal(d.stepsUntilEnded(9, 1), 200, 'beyond what runs: when all of it has ended');
});

test('drain estimate: a stream past its predicted output counts halfway on to its cap', () => {
  const d = new ReplicaLedger(2);
  const { e } = running(0, 100, 0, 500);
  d.add(e);
  e.streamed = 300;
  assert.equal(d.stepsUntilEnded(1, 0), 100, '(500 − 300) / 2');
  e.streamed = 499;
  assert.equal(d.stepsUntilEnded(1, 1), 1, 'at least one step');
});

test('drain estimate: recomputed when time moves or the ledger changes, not in between', () => {
  const d = new ReplicaLedger(2);
  const a = running(0, 100, 0).e;
  d.add(a);
  assert.equal(d.stepsUntilEnded(1, 5), 100);
  a.streamed = 50;
  assert.equal(d.stepsUntilEnded(1, 5), 100, 'the same instant and ledger: the same answer');
  assert.equal(d.stepsUntilEnded(1, 6), 50);
  d.remove(a);
  assert.equal(d.stepsUntilEnded(1, 6), Infinity);
});

test("the ledger's mean pace counts only the replicas measured so far", () => {
  const ledger = new ReplicaLedger(3);
  assert.equal(ledger.meanPace(), 1, 'none measured');
  const [a, b] = ledger.replicas;
  a.pace = 2;
  a.paceTrack.samples = new SortedWindow(4);
  b.pace = 1;
  b.paceTrack.samples = new SortedWindow(4);
  assert.equal(ledger.meanPace(), 1.5, 'the third, never measured, is left out');
});

test('adapter slot estimate: the soonest adapter to have all its requests ended on the replica', () => {
  const d = new ReplicaLedger(2);
  const start = (
    replica: number,
    adapter: string | undefined,
    expect: number,
    streamed: number,
  ) => {
    const e: LedgerEntry = { ...running(replica, expect, 0).e, adapter };
    d.add(e);
    e.streamed = streamed;
  };
  assert.equal(d.stepsUntilAdapterSlot(0), Infinity, 'no adapter runs there');
  // Replica 0: adapter a's last request has 80 tokens to go (its other, 10); b's has 60.
  start(0, 'a', 100, 90);
  start(0, 'a', 100, 20);
  start(0, 'b', 100, 40);
  start(0, undefined, 100, 99);
  assert.equal(d.stepsUntilAdapterSlot(0), 60, 'b frees its slot first: its last request, 60');
  assert.equal(d.stepsUntilAdapterSlot(1), Infinity);
  assert.ok(hasAdapterSlot(d.replicas[0], 'a', 2), 'a runs there');
  assert.ok(!hasAdapterSlot(d.replicas[0], 'c', 2), 'two adapters, two slots');
  assert.ok(hasAdapterSlot(d.replicas[0], 'c', 3));
  assert.ok(hasAdapterSlot(d.replicas[1], 'c', 1), 'an empty batch');
});
