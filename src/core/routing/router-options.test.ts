// What a router may be asked beyond its composition: power-of-k choices on a large fleet, the
// risk of a replica on trial, and the LoRA adapter's residency.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ROUTERS } from './registry.ts';
import { Router } from './router.ts';
import { SCORERS } from './scorers.ts';
import { routeFleet, routeRequest, type RouteFleet } from './routing-test-kit.ts';

function place(router: Router, fleet: RouteFleet, r = routeRequest()): number {
  router.prepare(r.req, fleet.replicas, fleet.ctx);
  return router.pick(r, router.eligible(r, fleet.replicas, fleet.ctx), fleet.ctx).index;
}

test('power-of-two choices scores two replicas of many: never the busiest of the pair, deterministic by seed', () => {
  const loads = Array.from({ length: 64 }, (_, i) => i % 16);
  const picks = (seed: number) => {
    const router = new Router(ROUTERS['least-request'], { choices: 2, seed });
    const fleet = routeFleet(loads);
    return Array.from({ length: 50 }, () => place(router, fleet));
  };
  const a = picks(4);
  assert.deepEqual(a, picks(4));
  assert.notDeepEqual(a, picks(5));
  // With 2 of 64 sampled, the pick is rarely the fleet's least loaded, but its mean load is
  // well under the fleet's (7.5): the lower of two.
  const mean = a.reduce((s, i) => s + loads[i], 0) / a.length;
  assert.ok(mean < 6, `mean load of picks ${mean}`);
  assert.ok(new Set(a).size > 10, 'spread over the fleet');
});

test('risk: a replica on trial costs half its completion; a healthy one nothing', () => {
  const { replicas, ctx } = routeFleet([1, 1]);
  const r = routeRequest();
  const trial = { ...replicas[0], probe: true };
  const completion = SCORERS.completion.score(r, trial, ctx);
  assert.equal(SCORERS.risk.score(r, trial, ctx), 0.5 * completion);
  assert.equal(SCORERS.risk.score(r, replicas[1], ctx), 0);
  assert.equal(
    SCORERS.risk.score(r, { ...replicas[1], failureRate: 0.2 }, ctx),
    0.2 * SCORERS.completion.score(r, replicas[1], ctx),
  );
});

test('adapter: resident costs nothing, a free slot its load, full slots the wait for one too', () => {
  // Replica 2 decodes three streams of another adapter in its one slot.
  const fleet = routeFleet([0, 0, 3]);
  fleet.ctx = { ...fleet.ctx, spec: { ...fleet.ctx.spec, maxLoras: 1, adapterLoadMs: 30 } };
  const [warm, free, full] = [
    { ...fleet.replicas[0], loras: ['sql-lora'] },
    { ...fleet.replicas[1], loras: [] },
    { ...fleet.replicas[2], loras: ['chat-lora'] },
  ];
  const r = routeRequest({ adapter: 'sql-lora' });
  const score = (x: typeof warm) => SCORERS.adapter.score(r, x, fleet.ctx);
  assert.equal(score(warm), 0);
  assert.equal(score(free), 30);
  assert.ok(score(full) > 30, String(score(full)));
  assert.equal(SCORERS.adapter.score(routeRequest(), full, fleet.ctx), 0, 'the base model');
});
