// Every registered scorer obeys the Scorer rules (route.ts): a finite score ≥ 0 in its declared
// unit, deterministic, and more queue work on a replica never scores better.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SCORERS } from './scorers.ts';
import { routeFleet, routeRequest } from './routing-test-kit.ts';

const UNITS = new Set(['ms', 'requests', 'ratio']);

for (const [name, s] of Object.entries(SCORERS)) {
  test(`scorer ${name}: finite, at least 0, deterministic, in a known unit`, () => {
    assert.ok(UNITS.has(s.unit), `unit ${s.unit}`);
    const { replicas, ctx } = routeFleet([0, 1, 5, 30, 90]);
    for (const r of [routeRequest(), routeRequest({ inputTokens: 7_000, outputTokens: 2_000 })]) {
      for (const x of replicas) {
        const v = s.score(r, x, ctx);
        assert.ok(Number.isFinite(v) && v >= 0, `${v} on replica ${x.index}`);
        assert.equal(s.score(r, x, ctx), v);
      }
    }
  });
  test(`scorer ${name}: more queue work never scores better`, () => {
    const { replicas, ctx } = routeFleet([0, 1, 4, 16, 64]);
    const r = routeRequest();
    for (let i = 1; i < replicas.length; i++) {
      assert.ok(s.score(r, replicas[i], ctx) >= s.score(r, replicas[i - 1], ctx));
    }
  });
}
