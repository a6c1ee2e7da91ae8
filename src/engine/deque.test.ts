import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Deque } from './deque.ts';

test('a deque keeps order at both ends across growth', () => {
  const d = new Deque<number>(2);
  const model: number[] = [];
  let x = 0;
  for (let i = 0; i < 1000; i++) {
    const op = (i * 7) % 5;
    if (op === 0 || op === 1) {
      d.pushBack(x);
      model.push(x++);
    } else if (op === 2) {
      d.pushFront(x);
      model.unshift(x++);
    } else {
      assert.equal(d.popFront(), model.shift());
    }
    assert.equal(d.size, model.length);
    assert.equal(d.peekFront(), model[0]);
  }
  assert.deepEqual(
    Array.from({ length: d.size }, (_, i) => d.at(i)),
    model,
  );
  assert.equal(d.at(d.size), undefined);
});
