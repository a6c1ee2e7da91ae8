// Every registered picker obeys the Picker rules (route.ts): an index into the list it was
// given, deterministic given its state, state that survives a JSON round trip; and on equal
// scores it spreads requests rather than piling them on one replica.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PICKERS } from './pickers.ts';

const scoresOf = (k: number, n: number) =>
  Float64Array.from({ length: n }, (_, i) => (i * 7 + k) % 5);

for (const [name, p] of Object.entries(PICKERS)) {
  test(`picker ${name}: returns an index into the list it was given`, () => {
    const state = p.initState();
    for (const n of [1, 2, 3, 7, 64]) {
      for (let k = 0; k < 20; k++) {
        const i = p.pick(state, scoresOf(k, n), n);
        assert.ok(Number.isInteger(i) && i >= 0 && i < n);
      }
    }
  });
  test(`picker ${name}: deterministic, and its state survives a JSON round trip`, () => {
    let a = p.initState();
    const b = p.initState();
    for (let k = 0; k < 50; k++) {
      a = JSON.parse(JSON.stringify(a));
      assert.equal(p.pick(a, scoresOf(k, 4), 4), p.pick(b, scoresOf(k, 4), 4));
    }
  });
  test(`picker ${name}: spreads requests over equal scores`, () => {
    const state = p.initState();
    const seen = new Set<number>();
    for (let k = 0; k < 4; k++) seen.add(p.pick(state, new Float64Array(4), 4));
    assert.equal(seen.size, 4);
  });
}

test('lowest picks the lowest score', () => {
  const p = PICKERS.lowest;
  assert.equal(p.pick(p.initState(), Float64Array.of(3, 1, 2), 3), 1);
});
