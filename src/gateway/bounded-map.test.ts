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
