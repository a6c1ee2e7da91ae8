import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRng } from '../../runtime/seeded-rng.ts';
import { BinaryHeap } from './binary-heap.ts';

interface Item {
  key: number;
  id: number;
}
const before = (a: Item, b: Item) => a.key < b.key || (a.key === b.key && a.id < b.id);

test('pushes, pops and removes in random order give the items in (key, id) order', () => {
  const rng = new SeededRng(3);
  const heap = new BinaryHeap<Item>(before);
  const held: Item[] = [];
  const popped: Item[] = [];
  for (let i = 0; i < 5000; i++) {
    const r = rng.next();
    if (r < 0.55) {
      const item = { key: Math.floor(rng.next() * 50), id: i };
      heap.push(item);
      held.push(item);
    } else if (r < 0.85) {
      const top = heap.pop();
      if (top === undefined) continue;
      held.sort((a, b) => (before(a, b) ? -1 : 1));
      assert.equal(top, held.shift());
      popped.push(top);
    } else if (held.length > 0) {
      const victim = held.splice(Math.floor(rng.next() * held.length), 1)[0];
      assert.ok(heap.remove(victim));
      assert.ok(!heap.remove(victim), 'a removed item is gone');
    }
    assert.equal(heap.size, held.length);
  }
  assert.ok(popped.length > 1000);
  heap.clear();
  assert.equal(heap.peek(), undefined);
});
