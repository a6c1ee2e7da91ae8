// The default router weighs locality and load in one unit: prefill saved by a replica's cache
// against queue work and gap overruns added by its load.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ROUTERS } from './registry.ts';
import { Router } from './router.ts';
import { occupy, routeFleet, routeRequest } from './routing-test-kit.ts';

const doc = { blockTokens: 16, hashes: Array.from({ length: 375 }, (_, i) => `doc.${i}`) };

function placeDoc(router: Router, fleet: ReturnType<typeof routeFleet>, id: string): number {
  const r = routeRequest({ id, inputTokens: 6_100, prefix: doc });
  router.prepare(r.req, fleet.replicas, fleet.ctx);
  const x = router.pick(r, router.eligible(r, fleet.replicas, fleet.ctx), fleet.ctx);
  router.placed(r, x.index);
  return x.index;
}

test('a request whose prefix a replica holds goes there while loads are alike', () => {
  const router = new Router(ROUTERS['expected-completion']);
  const fleet = routeFleet([2, 2, 2, 2]);
  const first = placeDoc(router, fleet, 'a');
  for (let k = 0; k < 5; k++) assert.equal(placeDoc(router, fleet, `b${k}`), first);
});

test('it leaves the warm replica once the queue there costs more than the prefill it saves', () => {
  const router = new Router(ROUTERS['expected-completion']);
  const fleet = routeFleet([2, 2, 2, 2]);
  const first = placeDoc(router, fleet, 'a');
  // Long prompts still to prefill on the warm replica: more queue work than a cold prefill.
  for (let k = 0; k < 8; k++) occupy(fleet, first, 8_000);
  assert.notEqual(placeDoc(router, fleet, 'b'), first);
});

test('a prefill that must stall streams goes where the streams can spare a slow gap', () => {
  // Two replicas of four streams each; replica `tolerant`'s have streamed 150 tokens, enough
  // gaps for their p99 to hide one slow one; the other's have just started.
  for (const tolerant of [0, 1]) {
    for (const seed of [1, 2, 3]) {
      const router = new Router(ROUTERS['expected-completion'], { seed });
      const fleet = routeFleet([4, 4]);
      for (const e of fleet.ctx.ledger.replicas[tolerant].entries) {
        for (let k = 0; k < 150; k++) fleet.ctx.ledger.token(e);
      }
      // An 8,000-token prompt's one prefill step (85 ms) runs past its own 80 ms objective on
      // either replica: somebody's streams get a slow gap.
      const r = routeRequest({ inputTokens: 8_000 });
      router.prepare(r.req, fleet.replicas, fleet.ctx);
      const x = router.pick(r, router.eligible(r, fleet.replicas, fleet.ctx), fleet.ctx);
      assert.equal(x.index, tolerant);
    }
  }
});
