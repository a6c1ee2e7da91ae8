// Every registered picker obeys the Picker rules (route.ts): an index into the list it was
// given, deterministic given its state, state that survives a JSON round trip; and on equal
// scores, requests without a session spread rather than pile on one replica.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PICKERS } from './pickers.ts';
import { routeFleet, routeRequest } from './routing-test-kit.ts';

const scoresOf = (k: number, n: number) =>
  Float64Array.from({ length: n }, (_, i) => (i * 7 + k) % 5);

for (const [name, p] of Object.entries(PICKERS)) {
  test(`picker ${name}: returns an index into the list it was given`, () => {
    const state = p.initState(7);
    for (const n of [1, 2, 3, 7, 64]) {
      const { replicas, ctx } = routeFleet(Array.from({ length: n }, (_, i) => (i * 3) % 5));
      for (let k = 0; k < 20; k++) {
        const r = routeRequest({ id: `r${k}`, session: k % 2 === 0 ? `s${k % 6}` : undefined });
        const i = p.pick(state, scoresOf(k, n), replicas, r, ctx);
        assert.ok(Number.isInteger(i) && i >= 0 && i < n);
      }
    }
  });
  test(`picker ${name}: deterministic, and its state survives a JSON round trip`, () => {
    let a = p.initState(7);
    const b = p.initState(7);
    const { replicas, ctx } = routeFleet([1, 0, 2, 0]);
    for (let k = 0; k < 50; k++) {
      a = JSON.parse(JSON.stringify(a));
      const r = routeRequest({ id: `r${k}`, session: `s${k % 3}` });
      const scores = scoresOf(k % 2, 4);
      assert.equal(p.pick(a, scores, replicas, r, ctx), p.pick(b, scores, replicas, r, ctx));
    }
  });
  test(`picker ${name}: spreads requests over an idle fleet`, () => {
    const state = p.initState(7);
    const { replicas, ctx } = routeFleet([0, 0, 0, 0]);
    const seen = new Set<number>();
    for (let k = 0; k < 64; k++) {
      seen.add(p.pick(state, new Float64Array(4), replicas, routeRequest({ id: `r${k}` }), ctx));
    }
    assert.equal(seen.size, 4);
  });
}

test('lowest picks the lowest score', () => {
  const p = PICKERS.lowest;
  const { replicas, ctx } = routeFleet([0, 0, 0]);
  assert.equal(p.pick(p.initState(1), Float64Array.of(3, 1, 2), replicas, routeRequest(), ctx), 1);
});

test('session-hash sends a session to one replica whatever the load, and moves few when one leaves', () => {
  const p = PICKERS['session-hash'];
  const state = p.initState(1);
  const { replicas, ctx } = routeFleet([0, 50, 0, 3]);
  const placed = new Map<string, number>();
  for (let k = 0; k < 200; k++) {
    const r = routeRequest({ id: `r${k}`, session: `s${k % 40}` });
    const at = replicas[p.pick(state, new Float64Array(4), replicas, r, ctx)].index;
    assert.equal(placed.get(`s${k % 40}`) ?? at, at);
    placed.set(`s${k % 40}`, at);
  }
  const fewer = replicas.filter((x) => x.index !== 2);
  let moved = 0;
  for (const [s, at] of placed) {
    const r = routeRequest({ session: s });
    const now = fewer[p.pick(state, new Float64Array(3), fewer, r, ctx)].index;
    if (at !== 2 && now !== at) moved++;
  }
  assert.equal(moved, 0, 'only the sessions of the replica that left move');
});

test('cache-aware follows a match above half the prompt, until the loads are out of balance', () => {
  const p = PICKERS['cache-aware'];
  const { replicas, ctx } = routeFleet([10, 0, 0]);
  ctx.hits = Float64Array.of(150, 0, 0);
  const r = routeRequest({ inputTokens: 200 });
  assert.equal(p.pick(p.initState(1), new Float64Array(3), replicas, r, ctx), 0);
  const busy = routeFleet([40, 2, 3]);
  busy.ctx.hits = Float64Array.of(150, 0, 0);
  assert.equal(p.pick(p.initState(1), new Float64Array(3), busy.replicas, r, busy.ctx), 1);
});
