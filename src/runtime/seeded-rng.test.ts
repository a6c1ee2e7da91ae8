import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRng } from './seeded-rng.ts';

const draw = (rng: { next(): number }, n = 5) => Array.from({ length: n }, () => rng.next());

test('same seed, same sequence; different seeds differ', () => {
  assert.deepEqual(draw(new SeededRng(1)), draw(new SeededRng(1)));
  assert.notDeepEqual(draw(new SeededRng(1)), draw(new SeededRng(2)));
});

test('forks are independent of the parent and of each other, and nest by path', () => {
  const root = new SeededRng(9);
  const before = draw(root.fork('a'));
  draw(root, 100);
  assert.deepEqual(
    draw(root.fork('a')),
    before,
    'forking does not depend on how far the parent advanced',
  );
  assert.notDeepEqual(draw(root.fork('a')), draw(root.fork('b')));
  assert.notDeepEqual(draw(root.fork('w').fork('a')), draw(root.fork('a')));
});

test('uniform in [0, 1) with the right mean', () => {
  const rng = new SeededRng(3);
  let sum = 0;
  for (let i = 0; i < 100_000; i++) {
    const x = rng.next();
    assert.ok(x >= 0 && x < 1);
    sum += x;
  }
  assert.ok(Math.abs(sum / 100_000 - 0.5) < 0.005);
});
