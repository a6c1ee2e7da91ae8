import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BoundedMap } from './bounded-map.ts';

test('keeps the newest entries, each for its TTL', () => {
  const m = new BoundedMap<number>(2, 100);
  m.set('a', 1, 0);
  m.set('b', 2, 10);
  m.set('c', 3, 20);
  assert.equal(m.get('a', 20), undefined, 'evicted: capacity 2');
  assert.equal(m.get('b', 110), 2);
  assert.equal(m.get('b', 111), undefined, 'expired');
  m.set('c', 4, 50);
  assert.equal(m.get('c', 149), 4, 'a re-set entry is fresh again');
});

test('a key set again is evicted once, by its newest set, never by an older one', () => {
  const m = new BoundedMap<number>(3);
  m.set('a', 1, 0);
  m.set('b', 2, 0);
  m.set('a', 3, 0); // 'a' again: its first slot must not evict the new value
  m.set('c', 4, 0); // the ring's oldest slot was 'a' (serial 1): stale, nothing evicted
  assert.equal(m.get('a', 0), 3);
  m.set('d', 5, 0); // evicts 'b'
  assert.equal(m.get('b', 0), undefined);
  assert.equal(m.get('a', 0), 3);
  m.set('e', 6, 0); // evicts 'a' (its newest set)
  assert.equal(m.get('a', 0), undefined);
  assert.deepEqual(
    ['c', 'd', 'e'].map((k) => m.get(k, 0)),
    [4, 5, 6],
  );
});

test('holds at most its capacity however many keys pass through', () => {
  const m = new BoundedMap<number>(100);
  for (let i = 0; i < 10_000; i++) m.set(`k${i}`, i, 0);
  let kept = 0;
  for (let i = 0; i < 10_000; i++) if (m.get(`k${i}`, 0) !== undefined) kept++;
  assert.equal(kept, 100);
  assert.equal(m.get('k9999', 0), 9999);
});
