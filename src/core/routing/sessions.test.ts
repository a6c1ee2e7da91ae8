// Session stickiness through the router: a session goes back to its replica; soft stickiness
// lets it leave an overloaded one, hard does not; a session forgets its replica after its TTL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ROUTERS } from './registry.ts';
import { Router } from './router.ts';
import { occupy, routeFleet, routeRequest, type RouteFleet } from './routing-test-kit.ts';
import type { SessionPolicy } from './sessions.ts';

const policy = (mode: 'soft' | 'hard'): SessionPolicy => ({
  mode,
  ttlMs: 10_000,
  slackMs: 250,
  maxSessions: 100,
});

function place(router: Router, fleet: RouteFleet, session: string, id: string): number {
  const r = routeRequest({ id, session });
  router.prepare(r.req, fleet.replicas, fleet.ctx);
  return router.pick(r, router.eligible(r, fleet.replicas, fleet.ctx), fleet.ctx).index;
}

test('a session returns to its replica while that replica stays within the slack', () => {
  const router = new Router(ROUTERS['expected-completion'], { sessions: policy('soft') });
  const fleet = routeFleet([0, 0, 0, 0]);
  const first = place(router, fleet, 'chat-1', 'a');
  // A little more load there than elsewhere: still within the slack, so it stays.
  occupy(fleet, first);
  assert.equal(place(router, fleet, 'chat-1', 'b'), first);
});

test('soft stickiness escapes an overloaded replica; hard stickiness does not', () => {
  for (const mode of ['soft', 'hard'] as const) {
    const router = new Router(ROUTERS['expected-completion'], { sessions: policy(mode) });
    const fleet = routeFleet([0, 0, 0, 0]);
    const first = place(router, fleet, 'chat-1', 'a');
    // Its replica fills with long prompts still to prefill: seconds of queue work ahead.
    for (let k = 0; k < 40; k++) occupy(fleet, first, 6_000);
    const next = place(router, fleet, 'chat-1', 'b');
    if (mode === 'hard') assert.equal(next, first);
    else assert.notEqual(next, first);
  }
});

test('a session forgets its replica after its TTL', () => {
  const router = new Router(ROUTERS['round-robin'], { sessions: policy('hard') });
  const fleet = routeFleet([0, 0, 0, 0]);
  const first = place(router, fleet, 'chat-1', 'a');
  assert.equal(place(router, fleet, 'chat-1', 'b'), first);
  fleet.ctx.nowMs = 20_001;
  assert.notEqual(place(router, fleet, 'chat-1', 'c'), first, 'round-robin moves on');
  assert.equal(router.sessions?.size, 1);
});

test('ties break the same way for the same seed, and differently for another', () => {
  const picks = (seed: number) => {
    const router = new Router(ROUTERS['expected-completion'], { seed });
    const fleet = routeFleet(Array.from({ length: 16 }, () => 0));
    return Array.from({ length: 12 }, (_, k) => place(router, fleet, `s${k}`, `r${k}`));
  };
  assert.deepEqual(picks(7), picks(7));
  assert.notDeepEqual(picks(7), picks(8));
});
