import { test } from 'node:test';
import assert from 'node:assert/strict';
import { adapterPlacement } from './adapter-placement.ts';
import { ConfigError } from '../errors.ts';

const ADAPTERS = ['a0', 'a1', 'a2', 'a3', 'a4'];

test('each adapter is on exactly k replicas, spread round-robin; a replica added later serves as index mod n does', () => {
  for (const k of [1, 2, 3, 4]) {
    const of = adapterPlacement(ADAPTERS, 4, k);
    for (const a of ADAPTERS) {
      const on = [0, 1, 2, 3].filter((r) => of(r).includes(a));
      assert.equal(on.length, k, `${a} with k ${k}`);
    }
    assert.deepEqual(of(6), of(2));
  }
  assert.deepEqual([0, 1, 2, 3].map(adapterPlacement(ADAPTERS, 4, 1)), [
    ['a0', 'a4'],
    ['a1'],
    ['a2'],
    ['a3'],
  ]);
});

test('k outside [1, replicas], or no adapters to place: a ConfigError naming the flag', () => {
  for (const [adapters, k] of [
    [ADAPTERS, 0],
    [ADAPTERS, 5],
    [ADAPTERS, 1.5],
    [[], 1],
  ] as const) {
    assert.throws(
      () => adapterPlacement(adapters, 4, k),
      (e: unknown) => e instanceof ConfigError && /--adapter-replicas/.test(e.message),
    );
  }
});
