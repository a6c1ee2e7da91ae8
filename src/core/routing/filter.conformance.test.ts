// Every registered filter obeys the Filter rules (route.ts): it never adds a replica, keeps the
// order it was given, and is deterministic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FILTERS } from './filters.ts';
import { routeFleet, routeRequest } from './routing-test-kit.ts';

const shapes = [[0], [3, 0, 7], [40, 2, 2, 90, 0], [100, 100]];

for (const [name, f] of Object.entries(FILTERS)) {
  test(`filter ${name}: keeps a subset, in order, the same each time`, () => {
    for (const loads of shapes) {
      const { replicas, ctx } = routeFleet(loads);
      for (const r of [routeRequest(), routeRequest({ inputTokens: 6_000 }, 1)]) {
        const out: typeof replicas = [];
        f.filter(r, replicas, ctx, out);
        let at = -1;
        for (const x of out) {
          const i = replicas.indexOf(x);
          assert.ok(i > at, 'a member of the input, in its order, once');
          at = i;
        }
        const again: typeof replicas = [];
        f.filter(r, replicas, ctx, again);
        assert.deepEqual(again, out);
      }
    }
  });
  test(`filter ${name}: has a one-line description`, () => {
    assert.ok(f.description.length > 0 && !f.description.includes('\n'));
  });
}

test('avoid drops the failed replica unless it is the only one', () => {
  const { replicas, ctx } = routeFleet([0, 0, 0]);
  const out: typeof replicas = [];
  FILTERS.avoid.filter(routeRequest({}, 1), replicas, ctx, out);
  assert.deepEqual(
    out.map((x) => x.index),
    [0, 2],
  );
  const one = [replicas[1]];
  out.length = 0;
  FILTERS.avoid.filter(routeRequest({}, 1), one, ctx, out);
  assert.deepEqual(out, one);
});

test('held keeps a held replica only for the request it is held for', () => {
  const { replicas, ctx } = routeFleet([0, 0]);
  const mine = routeRequest({ id: 'long' });
  const held = { ...ctx, heldFor: (i: number) => (i === 0 ? mine : undefined) };
  const out: typeof replicas = [];
  FILTERS.held.filter(routeRequest(), replicas, held, out);
  assert.deepEqual(
    out.map((x) => x.index),
    [1],
  );
  out.length = 0;
  FILTERS.held.filter(mine, replicas, held, out);
  assert.equal(out.length, 2);
});

test('flow-fit keeps the replicas where the next step stays fast, else the slow ones', () => {
  // Replica 1's KV is reserved to its limit (96 streams × 1,000 tokens of 100,000, 5% kept free).
  const { replicas, ctx } = routeFleet([1, 96, 2]);
  const out: typeof replicas = [];
  FILTERS['flow-fit'].filter(routeRequest(), replicas, ctx, out);
  assert.deepEqual(
    out.map((x) => x.index),
    [0, 2],
  );
});

test('flow-fit-any keeps the fast replicas, and a slow one only where its cache saves prefill', () => {
  // Replicas 0 and 2 fit fast, 1 and 3 slow, 4 not at all; 3's cache holds more of the prompt
  // than either fast one's, 1's no more.
  const { replicas, ctx } = routeFleet([0, 0, 0, 0, 0]);
  const kinds = ['fast', 'slow', 'fast', 'slow', 'no'] as const;
  const at = new Map(ctx.ledger.replicas.map((a, i) => [a, kinds[i]]));
  const flow = { fit: (a: (typeof ctx.ledger.replicas)[number]) => ({ kind: at.get(a) }) };
  const kept = (hits: number[]) => {
    const c = { ...ctx, flow: flow as unknown as typeof ctx.flow, hits: Float64Array.from(hits) };
    const out: typeof replicas = [];
    FILTERS['flow-fit-any'].filter(routeRequest({ inputTokens: 6_000 }), replicas, c, out);
    return out.map((x) => x.index);
  };
  assert.deepEqual(kept([0, 0, 0, 0, 0]), [0, 2]);
  assert.deepEqual(kept([0, 2_000, 2_000, 4_000, 6_000]), [0, 2, 3]);
  // With no fast replica, every slow one.
  kinds.forEach((_, i) => at.set(ctx.ledger.replicas[i], i % 2 === 1 ? 'slow' : 'no'));
  assert.deepEqual(kept([0, 0, 0, 0, 0]), [1, 3]);
});

test('servable keeps the replicas serving the adapter asked for; a base-model request goes anywhere', () => {
  const { replicas, ctx } = routeFleet([0, 0, 0]);
  const fleet = [
    { ...replicas[0], servable: ['sql-lora'] },
    { ...replicas[1], servable: ['chat-lora'] },
    replicas[2],
  ];
  const out: typeof replicas = [];
  FILTERS.servable.filter(routeRequest({ adapter: 'sql-lora' }), fleet, ctx, out);
  assert.deepEqual(
    out.map((x) => x.index),
    [0, 2],
  );
  out.length = 0;
  FILTERS.servable.filter(routeRequest(), fleet, ctx, out);
  assert.equal(out.length, 3);
});

test('prefill-fit drops the replicas whose prefill pool has its next steps queued; none without a pool', () => {
  const { replicas, ctx } = routeFleet([0, 0, 0]);
  const fleet = [
    { ...replicas[0], prefillBacklogSteps: 0.5 },
    { ...replicas[1], prefillBacklogSteps: 2 },
    replicas[2],
  ];
  const out: typeof replicas = [];
  FILTERS['prefill-fit'].filter(routeRequest(), fleet, ctx, out);
  assert.deepEqual(
    out.map((x) => x.index),
    [0, 2],
  );
});
