// Virtual token counters: charges in weighted tokens over the tenant's weight; a tenant that
// comes back after idling is lifted to the backlogged floor, so idle time earns no credit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_SERVICE_COST, VirtualTokenCounters } from './virtual-token-counter.ts';

const weights: Record<string, number> = { a: 1, b: 2 };
const counters = (cost = DEFAULT_SERVICE_COST) =>
  new VirtualTokenCounters(cost, (t) => weights[t] ?? 1);

test('prompt tokens cost input_weight when the prefill starts, output tokens output_weight each, over the weight', () => {
  const v = counters();
  v.chargeInput('a', 100, 0);
  v.chargeOutput('a', 10);
  v.chargeInput('b', 100, 0);
  v.chargeOutput('b', 10);
  assert.equal(v.service('a'), 100 + 2 * 10);
  assert.equal(v.counter('a'), 120);
  assert.equal(v.service('b'), 120);
  assert.equal(v.counter('b'), 60, 'twice the weight, half the counter for the same service');
});

test('cached prompt tokens are free unless the cost charges them', () => {
  const v = counters();
  v.chargeInput('a', 1_000, 600);
  assert.equal(v.service('a'), 400);
  const all = counters({ ...DEFAULT_SERVICE_COST, chargeCachedInput: true });
  all.chargeInput('a', 1_000, 600);
  assert.equal(all.service('a'), 1_000);
});

test('a tenant backlogged again is lifted to the smallest backlogged counter: idling earns nothing', () => {
  const v = counters();
  v.backlog('a');
  v.backlog('c');
  v.chargeOutput('a', 500); // a: 1,000
  v.chargeOutput('c', 300); // c: 600
  // d never ran: it arrives at the floor, not at 0, so it cannot take 600 tokens' worth at once.
  v.backlog('d');
  assert.equal(v.counter('d'), 600);
  // a tenant whose counter is above the floor keeps it.
  v.idle('a');
  v.backlog('a');
  assert.equal(v.counter('a'), 1_000);
});

test("one counter across priority bands: a tenant still waiting in one band is not idled when another band's queue of it empties", () => {
  const v = counters();
  v.backlog('x'); // x waits in band 0 …
  v.backlog('x'); // … and in band 1
  v.backlog('y');
  v.chargeOutput('y', 5_000); // y: 10,000
  v.idle('x'); // x's band-1 request is dispatched; its band-0 one still waits
  assert.equal(v.floor(), 0, 'x is still backlogged, at 0');
  v.backlog('x'); // x queues in band 1 again: not a return from idling
  assert.equal(v.counter('x'), 0, 'no lift for a tenant that never stopped waiting');
  v.idle('x');
  v.idle('x');
  assert.equal(v.floor(), 10_000, 'both its queues empty: idle');
});

test('with nothing backlogged, a returning tenant is lifted to the counter of the tenant served last', () => {
  const v = counters();
  v.backlog('a');
  v.chargeOutput('a', 50);
  v.idle('a');
  v.backlog('c');
  assert.equal(v.counter('c'), 100);
  assert.equal(v.floor(), 100);
});

test('expected charge is in counter units: weighted tokens over the weight', () => {
  const v = counters();
  assert.equal(v.expectedCharge('a', 100, 50), 200);
  assert.equal(v.expectedCharge('b', 100, 50), 100);
});

test('the optional KV term charges GiB-seconds of cache held, over the weight', () => {
  const off = counters();
  off.chargeKv('a', 10);
  assert.equal(off.service('a'), 0, 'weight 0: memory held is free');
  const on = counters({ ...DEFAULT_SERVICE_COST, kvGibSecondWeight: 50 });
  on.chargeKv('b', 2);
  assert.equal(on.service('b'), 100);
  assert.equal(on.counter('b'), 50);
});

test('a new weight (a reloaded policy) divides the service from then on; what was charged stays', () => {
  const live: Record<string, number> = { a: 1 };
  const v = new VirtualTokenCounters(DEFAULT_SERVICE_COST, (t) => live[t] ?? 1);
  const account = v.account('a');
  v.chargeInput(account, 100, 0);
  live.a = 4;
  v.reweigh();
  assert.equal(v.weight('a'), 4);
  v.chargeInput(account, 100, 0);
  assert.equal(
    v.counter('a'),
    100 + 100 / 4,
    'the account a ticket holds is charged at the new weight',
  );
  assert.equal(v.service('a'), 200);
});
