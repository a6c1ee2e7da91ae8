// Every registered router is a valid composition (its filters, scorers and picker are
// registered), describes itself in one line, and places like a router should: on a replica it
// was given, deterministically, spreading over an idle fleet.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FILTERS } from './filters.ts';
import { PICKERS } from './pickers.ts';
import { ROUTERS } from './registry.ts';
import { Router } from './router.ts';
import { SCORERS } from './scorers.ts';
import { occupy, routeFleet, routeRequest } from './routing-test-kit.ts';

for (const [type, spec] of Object.entries(ROUTERS)) {
  test(`router ${type}: composed of registered parts, described in one line`, () => {
    assert.equal(spec.type, type);
    for (const f of spec.filters) assert.ok(FILTERS[f] !== undefined, `filter ${f}`);
    for (const s of spec.scorers) {
      assert.ok(SCORERS[s.name] !== undefined, `scorer ${s.name}`);
      assert.ok(Number.isFinite(s.weight) && s.weight > 0);
    }
    assert.ok(PICKERS[spec.picker] !== undefined, `picker ${spec.picker}`);
    assert.ok(spec.description.length > 0 && !spec.description.includes('\n'));
  });
  test(`router ${type}: places on a replica it was given, deterministically`, () => {
    const a = new Router(spec, { seed: 3 });
    const b = new Router(spec, { seed: 3 });
    for (let k = 0; k < 40; k++) {
      const { replicas, ctx } = routeFleet(
        [k % 3, (k * 5) % 4, 1, (k * 7) % 6].slice(0, 1 + (k % 4)),
      );
      const r = routeRequest({ id: `r${k}` });
      a.prepare(r.req, replicas, ctx);
      const pool = a.eligible(r, replicas, ctx);
      if (pool.length === 0) continue;
      const x = a.pick(r, pool, ctx);
      assert.ok(replicas.includes(x));
      assert.equal(b.pick(r, b.eligible(r, replicas, ctx), ctx).index, x.index);
    }
  });
  test(`router ${type}: spreads requests over an idle fleet`, () => {
    const router = new Router(spec, { seed: 3 });
    const fleet = routeFleet([0, 0, 0, 0]);
    const seen = new Set<number>();
    for (let k = 0; k < 4; k++) {
      const r = routeRequest({ id: `r${k}` });
      router.prepare(r.req, fleet.replicas, fleet.ctx);
      const x = router.pick(r, router.eligible(r, fleet.replicas, fleet.ctx), fleet.ctx);
      seen.add(x.index);
      occupy(fleet, x.index);
    }
    assert.equal(seen.size, 4);
  });
}

test('least-request picks the least loaded replica', () => {
  const router = new Router(ROUTERS['least-request']);
  const { replicas, ctx } = routeFleet([3, 1, 2]);
  router.prepare(routeRequest().req, replicas, ctx);
  assert.equal(router.pick(routeRequest(), replicas, ctx).index, 1);
});
