// Every registered router obeys the Router rules: valid index, deterministic, state is plain data.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ROUTERS } from './registry.ts';
import type { ReplicaSnapshot } from './replica-snapshot.ts';
import type { LlmRequest } from '../request/request.ts';

const req: LlmRequest = {
  id: 'r',
  arrivalMs: 0,
  inputTokens: 10,
  outputTokens: 5,
  tenant: 't',
  sloClass: 'interactive',
};
const fleet = (loads: number[]): ReplicaSnapshot[] =>
  loads.map((inFlight, index) => ({ index, inFlight, running: inFlight, waiting: 0, kvUsage: 0 }));

for (const [type, make] of Object.entries(ROUTERS)) {
  test(`${type}: returns an index into the list it was given`, () => {
    const router = make();
    const state = router.initState();
    for (const size of [1, 2, 3, 7]) {
      for (let k = 0; k < 20; k++) {
        const i = router.pick(
          state,
          req,
          fleet(Array.from({ length: size }, (_, j) => (j * 7 + k) % 5)),
        );
        assert.ok(Number.isInteger(i) && i >= 0 && i < size);
      }
    }
  });
  test(`${type}: deterministic and its state survives a JSON round trip`, () => {
    const a = make();
    const b = make();
    let sa = a.initState();
    const sb = b.initState();
    for (let k = 0; k < 50; k++) {
      const replicas = fleet([k % 3, (k * 5) % 4, 1, (k * 7) % 6]);
      sa = JSON.parse(JSON.stringify(sa));
      assert.equal(a.pick(sa, req, replicas), b.pick(sb, req, replicas));
    }
  });
  test(`${type}: spreads requests over an idle fleet`, () => {
    const router = make();
    const state = router.initState();
    const seen = new Set<number>();
    for (let k = 0; k < 4; k++) seen.add(router.pick(state, req, fleet([0, 0, 0, 0])));
    assert.equal(seen.size, 4);
  });
}

test('least-request picks the least loaded replica', () => {
  const router = ROUTERS['least-request']();
  const state = router.initState();
  assert.equal(router.pick(state, req, fleet([3, 1, 2])), 1);
});
