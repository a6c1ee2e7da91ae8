// One tenant's idempotency keys: their answers held to a byte budget, the oldest answers let go
// first (their keys free again), an answer already replaced not counted twice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ReplayKeys } from './replay-keys.ts';

const answer = (chars: number) => ({ status: 200, body: 'x'.repeat(chars), headers: {} });

test("answers past the tenant's bytes forget the oldest first; their keys are free again", () => {
  // Room for three answers of 100 characters (200 bytes each, as the heap holds them).
  const keys = new ReplayKeys(1_000, 60_000, 650);
  for (const id of ['a', 'b', 'c', 'd'])
    keys.set(id, { fingerprint: 'fp', response: answer(100) }, 0);
  assert.equal(keys.get('a', 0), undefined, 'the oldest let go');
  for (const id of ['b', 'c', 'd']) assert.equal(keys.get(id, 0)?.response?.body.length, 100);
  // An in-flight key holds no answer: it counts nothing and is never let go for bytes.
  keys.set('e', { fingerprint: 'fp' }, 0);
  keys.set('f', { fingerprint: 'fp', response: answer(100) }, 0);
  assert.equal(keys.get('b', 0), undefined);
  assert.deepEqual(keys.get('e', 0), { fingerprint: 'fp' });
});

test('an answer whose key was released or taken again is not let go in its place', () => {
  const keys = new ReplayKeys(1_000, 60_000, 450);
  keys.set('a', { fingerprint: 'fp', response: answer(100) }, 0);
  keys.set('a', null, 0); // released: its answer no longer held
  const again = { fingerprint: 'other' };
  keys.set('a', again, 0); // claimed again, by another request
  keys.set('b', { fingerprint: 'fp', response: answer(100) }, 0);
  keys.set('c', { fingerprint: 'fp', response: answer(100) }, 0);
  assert.equal(keys.get('a', 0), again, "the old answer's turn to go passes the new claim by");
});
