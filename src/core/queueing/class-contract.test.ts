// Class contracts, through the shared pipeline on a small replica: interactive work is kept
// backlogged, and a lower class gets exactly what its contract says — nothing under strict
// priority, its reserved minimum share, the room a capped class yields, service once its oldest
// request has starved or aged — and no dispatch passes a band with work waiting without a
// contract that allows it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { replicaLoop, STEP_MS, type Loop } from './queueing-test-kit.ts';
import type { SloClassName } from '../request/slo-classes.ts';
import { ShareMeter } from './class-contract.ts';

const LONG = { ttft_ms: 1e9 }; // nothing expires: the backlog is the test's

/**
 * Interactive backlogged for `steps`, and `other` too — or, with `everySteps`, sent one request
 * every that many steps. Each request is 200 in, 40 out.
 */
function backlogged(
  other: SloClassName,
  classes: Record<string, unknown>,
  everySteps?: number,
  steps = 3_000,
): { loop: Loop; share: number; waits: number[] } {
  const loop = replicaLoop({ classes: { interactive: LONG, reasoning: LONG, ...classes } });
  let n = 0;
  const send = (cls: SloClassName) =>
    loop.offer({
      id: `${cls}-${n++}`,
      inputTokens: 200,
      outputTokens: 40,
      tenant: 't',
      sloClass: cls,
    });
  const keepQueued = (cls: SloClassName, depth: number) => {
    let queued = 0;
    for (const t of loop.p.dispatcher.waitingTickets()) if (t.cls.name === cls) queued++;
    for (; queued < depth; queued++) send(cls);
  };
  for (let i = 0; i < steps; i++) {
    keepQueued('interactive', 40);
    if (everySteps === undefined) keepQueued(other, 40);
    else if (i % everySteps === 0) send(other);
    loop.step();
  }
  const work = (cls: SloClassName) => loop.dispatched.filter((t) => t.cls.name === cls).length; // equal sizes: count is work
  const share = work(other) / (work(other) + work('interactive'));
  const waits = loop.dispatched
    .filter((t) => t.cls.name === other)
    .map((t) => t.dispatchedMs - t.offeredMs);
  return { loop, share, waits };
}

test('strict priority without a contract: a lower band gets nothing while a higher one has work', () => {
  const { loop, share } = backlogged('batch', {});
  assert.equal(share, 0);
  assert.equal(loop.p.dispatcher.passes.priority, 0);
});

test('a reserved minimum share is served while a higher band is backlogged', () => {
  const { loop, share } = backlogged('batch', { batch: { min_share: 0.25 } });
  assert.ok(share > 0.2 && share < 0.3, `batch share ${share}`);
  assert.ok(loop.p.dispatcher.passes.min_share > 0);
  assert.equal(loop.p.dispatcher.passes.priority, 0, 'no uncontracted inversion');
});

test('a class past its maximum share yields to the others with work', () => {
  const { loop, share } = backlogged('reasoning', { interactive: { ...LONG, max_share: 0.6 } });
  assert.ok(share > 0.35 && share < 0.45, `reasoning share ${share}`);
  assert.ok(loop.p.dispatcher.passes.max_share > 0);
  assert.equal(loop.p.dispatcher.passes.priority, 0);
});

test('starvation bound: a best-effort request goes ahead once it has waited starvation_ms', () => {
  const { loop, waits } = backlogged('best_effort', { best_effort: { starvation_ms: 2_000 } }, 20);
  assert.ok(waits.length > 10, `${waits.length} best-effort dispatches`);
  // Ahead of every band from then on: it goes at the next free slot, at most one request's
  // run (40 steps) later.
  assert.ok(Math.max(...waits) <= 2_000 + 40 * STEP_MS, `longest wait ${Math.max(...waits)}`);
  assert.ok(Math.max(...waits) >= 2_000, 'not before it starved: interactive has the room');
  assert.ok(loop.p.dispatcher.passes.starvation > 0);
  assert.equal(loop.p.dispatcher.passes.priority, 0);
});

test('aging: every aging_ms waited lifts the band one priority; it reaches the front', () => {
  // batch is priority 2: after 2 × 500 ms its oldest request is served ahead of interactive.
  const { loop, waits } = backlogged('batch', { batch: { aging_ms: 500 } }, 20);
  assert.ok(waits.length > 10);
  assert.ok(Math.max(...waits) <= 1_000 + 40 * STEP_MS, `longest wait ${Math.max(...waits)}`);
  assert.ok(Math.min(...waits) >= 1_000, 'not before it aged to the front');
  assert.ok(loop.p.dispatcher.passes.aging > 0);
});

test('share meter: decayed work over all bands', () => {
  const m = new ShareMeter();
  m.add(0, 300, 0);
  m.add(1, 100, 0);
  assert.equal(m.share(1, 0), 0.25);
  // One half-life later the old work counts half: (50 + 150) / (150 + 50 + 150).
  m.add(1, 150, 10_000);
  assert.equal(m.share(1, 10_000), 200 / 350);
});

test('an admin tenant has a lane of its own: served before every band, whatever its class', () => {
  const loop = replicaLoop({
    classes: { interactive: LONG },
    tenants: { ops: { lane: 'admin' }, '*': {} },
  });
  for (let i = 0; i < 60; i++) {
    loop.offer({
      id: `i-${i}`,
      inputTokens: 200,
      outputTokens: 40,
      tenant: 't',
      sloClass: 'interactive',
    });
  }
  loop.step();
  const before = loop.dispatched.length;
  const probe = loop.offer({
    id: 'probe',
    inputTokens: 50,
    outputTokens: 5,
    tenant: 'ops',
    sloClass: 'batch',
  });
  assert.equal(probe.band, -1);
  const waiting = [...loop.p.dispatcher.waitingTickets()].filter((t) => t !== probe).length;
  assert.ok(waiting > 20, `${waiting} interactive requests were waiting before it`);
  while (probe.state === 'queued') loop.step();
  assert.equal(loop.dispatched.indexOf(probe), before, 'the next dispatch after it arrived');
  assert.equal(loop.p.dispatcher.passes.priority, 0);
});
