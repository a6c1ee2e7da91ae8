// The fair queue: tenants in counter order, each tenant's own requests oldest first, and the
// estimate of how many would go before a new request of a given tenant.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FairQueue, type FairMember } from './fair-queue.ts';
import { DEFAULT_SERVICE_COST, VirtualTokenCounters } from './virtual-token-counter.ts';

interface Item extends FairMember {
  readonly id: string;
}

const item = (id: string, tenant: string, queueCost: number): Item => ({
  id,
  req: { tenant },
  queueCost,
  queued: false,
  long: false,
  offeredMs: 0,
  expiresMs: 1_000,
  cls: { objectives: { itlP99Ms: 80 }, contract: {} },
  demand: { prefillMs: 10 },
});

const ids = (xs: readonly Item[]) => xs.map((x) => x.id);

test('one tenant: oldest first, as FIFO', () => {
  const q = new FairQueue<Item>(new VirtualTokenCounters(DEFAULT_SERVICE_COST, () => 1));
  for (const id of ['1', '2', '3']) q.push(item(id, 'a', 10));
  assert.deepEqual(ids(q.collect(10, [])), ['1', '2', '3']);
});

test('tenants interleave by counter: a heavy tenant queued first does not go first', () => {
  const vtc = new VirtualTokenCounters(DEFAULT_SERVICE_COST, () => 1);
  const q = new FairQueue<Item>(vtc);
  for (let i = 0; i < 4; i++) q.push(item(`h${i}`, 'heavy', 1_000));
  q.push(item('l0', 'light', 100));
  q.push(item('l1', 'light', 100));
  // Both start at 0; ties go to the tenant backlogged first, then each pays its expected cost.
  assert.deepEqual(ids(q.collect(6, [])), ['h0', 'l0', 'l1', 'h1', 'h2', 'h3']);
  // After the heavy tenant was served 5,000 weighted tokens, the light one goes first.
  vtc.chargeInput('heavy', 5_000, 0);
  assert.deepEqual(ids(q.collect(3, [])), ['l0', 'l1', 'h0']);
  assert.equal(q.ahead('light'), 2, 'a new light request waits behind its own two only');
  assert.equal(q.ahead('heavy'), 6, 'a new heavy request waits behind everything');
});

test('weights: a tenant of weight 3 is served about three times the weighted tokens', () => {
  const vtc = new VirtualTokenCounters(DEFAULT_SERVICE_COST, (t) => (t === 'big' ? 3 : 1));
  const q = new FairQueue<Item>(vtc);
  for (let i = 0; i < 40; i++) {
    const big = item(`b${i}`, 'big', 0);
    big.queueCost = vtc.expectedCharge('big', 100, 0);
    const small = item(`s${i}`, 'small', 0);
    small.queueCost = vtc.expectedCharge('small', 100, 0);
    q.push(big);
    q.push(small);
  }
  const served: Record<string, number> = { big: 0, small: 0 };
  for (let i = 0; i < 40; i++) {
    const head = q.peek() as Item;
    q.remove(head);
    vtc.chargeInput(head.req.tenant, 100, 0);
    served[head.req.tenant] += 100;
  }
  assert.equal(served.big, 3_000);
  assert.equal(served.small, 1_000);
});

test('removal keeps the backlog and the counters right', () => {
  const vtc = new VirtualTokenCounters(DEFAULT_SERVICE_COST, () => 1);
  const q = new FairQueue<Item>(vtc);
  const a = item('a', 'x', 5);
  const b = item('b', 'y', 5);
  q.push(a);
  q.push(b);
  q.remove(a);
  assert.equal(q.live, 1);
  assert.deepEqual(ids(q.collect(5, [])), ['b']);
  assert.equal(q.headOf('x'), undefined);
  assert.equal(q.headOf('y'), b);
  q.remove(b);
  assert.equal(q.live, 0);
  assert.equal(q.peek(), undefined);
});

test('scored order: with only the virtual-service weight it is the VTC order', () => {
  const pure = { virtualService: 1, urgency: 0, age: 0, interference: 0 };
  const build = (score?: typeof pure) => {
    const vtc = new VirtualTokenCounters(DEFAULT_SERVICE_COST, () => 1);
    const q = new FairQueue<Item>(vtc, score);
    for (let i = 0; i < 4; i++) q.push(item(`h${i}`, 'heavy', 1_000));
    q.push(item('l0', 'light', 100));
    q.push(item('l1', 'light', 100));
    vtc.chargeInput('heavy', 5_000, 0);
    return q;
  };
  assert.deepEqual(ids(build(pure).collect(6, [], 0)), ids(build().collect(6, [], 0)));
});

test('scored order: urgency lifts a request near its deadline; interference holds a long prefill back', () => {
  const vtc = new VirtualTokenCounters(DEFAULT_SERVICE_COST, () => 1);
  const q = new FairQueue<Item>(vtc, { virtualService: 1, urgency: 4, age: 0, interference: 0 });
  const old = { ...item('late', 'heavy', 100), offeredMs: 0, expiresMs: 1_000 };
  q.push(old);
  q.push({ ...item('fresh', 'light', 100), offeredMs: 900, expiresMs: 2_900 });
  vtc.chargeInput('heavy', 300, 0); // heavy is 3 requests' worth ahead in service
  // At 100 ms the heavy tenant's request is not urgent: the light tenant goes first.
  assert.deepEqual(ids(q.collect(2, [], 100)), ['fresh', 'late']);
  // At 950 ms it has used 95% of its wait: 4 × 0.95 outweighs 3 requests' worth.
  assert.deepEqual(ids(q.collect(2, [], 950)), ['late', 'fresh']);

  const v2 = new VirtualTokenCounters(DEFAULT_SERVICE_COST, () => 1);
  const q2 = new FairQueue<Item>(v2, { virtualService: 1, urgency: 0, age: 0, interference: 1 });
  q2.push({ ...item('long', 'a', 100), demand: { prefillMs: 400 } });
  q2.push(item('short', 'b', 100));
  assert.deepEqual(ids(q2.collect(2, [], 0)), ['short', 'long']);
});
