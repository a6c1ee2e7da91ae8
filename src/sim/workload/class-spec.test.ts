import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isConfigError } from '../../core/errors.ts';
import { SeededRng } from '../../runtime/seeded-rng.ts';
import { classSampler, formatClassSpec, parseClassSpec } from './class-spec.ts';

test('parses a class name and a mix, normalising weights', () => {
  assert.deepEqual(parseClassSpec('batch'), { kind: 'single', name: 'batch' });
  const mix = parseClassSpec('interactive:7, batch:3');
  assert.deepEqual(mix, { kind: 'mix', names: ['interactive', 'batch'], weights: [0.7, 0.3] });
  assert.equal(formatClassSpec(mix), 'interactive:0.7,batch:0.3');
});

for (const bad of [
  '',
  'premium',
  'interactive:0',
  'interactive:-1,batch:1',
  'interactive:x',
  'interactive:0.5,interactive:0.5',
  'interactive:1:2',
  'interactive:1,',
  'premium:1',
]) {
  test(`rejects classes ${JSON.stringify(bad)}`, () => {
    assert.throws(
      () => parseClassSpec(bad),
      (e) => isConfigError(e) && e.path === '--classes',
    );
  });
}

test('a mix is drawn in its proportions', () => {
  const n = 200_000;
  const draw = classSampler(
    parseClassSpec('interactive:0.6,batch:0.3,best_effort:0.1'),
    new SeededRng(8),
  );
  const counts: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const c = draw();
    counts[c] = (counts[c] ?? 0) + 1;
  }
  assert.ok(Math.abs(counts.interactive / n - 0.6) < 0.005);
  assert.ok(Math.abs(counts.batch / n - 0.3) < 0.005);
  assert.ok(Math.abs(counts.best_effort / n - 0.1) < 0.005);
  assert.equal(counts.reasoning, undefined);
});

test('a single class draws nothing', () => {
  const rng = new SeededRng(1);
  assert.equal(classSampler(parseClassSpec('reasoning'), rng)(), 'reasoning');
  assert.equal(rng.next(), new SeededRng(1).next());
});
