import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SeededRng } from '../../runtime/seeded-rng.ts';
import { LengthDraw, lengthSampler } from './length-draw.ts';
import { parseLengthSpec } from './length-spec.ts';
import { shareGptLengths } from './sharegpt-lengths.ts';
import { mean, near } from './test-stats.ts';

const N = 200_000;

function sample(spec: string, n = N): Int32Array {
  const draw = lengthSampler(
    parseLengthSpec(spec, '--input'),
    new SeededRng(11),
    shareGptLengths().input,
  );
  const xs = new Int32Array(n);
  for (let i = 0; i < n; i++) xs[i] = draw();
  return xs;
}

test('fixed always gives its value', () => {
  assert.ok(sample('fixed:77', 1000).every((x) => x === 77));
});

test('uniform reaches both ends, stays inside and is flat', () => {
  const xs = sample('uniform:3:12');
  const counts = new Map<number, number>();
  for (const x of xs) counts.set(x, (counts.get(x) ?? 0) + 1);
  assert.deepEqual(
    [...counts.keys()].sort((a, b) => a - b),
    [3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
  );
  for (const c of counts.values()) assert.ok(near(c, N / 10, 0.03));
});

test('uniform with one value is that value', () => {
  assert.ok(sample('uniform:5:5', 1000).every((x) => x === 5));
});

test('exp gives integers of at least 1 with the requested mean', () => {
  const xs = sample('exp:200');
  assert.ok(xs.every((x) => Number.isInteger(x) && x >= 1));
  assert.ok(near(mean(xs), 200, 0.02), `mean ${mean(xs)}`);
  const small = sample('exp:0.2');
  assert.ok(small.every((x) => x >= 1));
  assert.ok(small.some((x) => x > 1));
});

function pairKey(i: number, o: number): string {
  return `${i},${o}`;
}

test('sharegpt for both sides draws whole rows: every pair is a real one', () => {
  const t = shareGptLengths();
  const rows = new Set<string>();
  for (let i = 0; i < t.rows; i++) rows.add(pairKey(t.input[i], t.output[i]));
  const spec = parseLengthSpec('sharegpt', '--input');
  const d = new LengthDraw(spec, spec, new SeededRng(1, 'a'), new SeededRng(1, 'b'), t);
  assert.ok(d.joint);
  let inputs = 0;
  for (let i = 0; i < 20_000; i++) {
    d.next();
    assert.ok(rows.has(pairKey(d.input, d.output)), `${d.input},${d.output} is not a row`);
    inputs += d.input;
  }
  assert.ok(near(inputs / 20_000, 2340, 0.03));
});

test('sharegpt on one side only draws that side from its own stream', () => {
  const t = shareGptLengths();
  const share = parseLengthSpec('sharegpt', '--output');
  const fixed = parseLengthSpec('fixed:10', '--input');
  const d = new LengthDraw(fixed, share, new SeededRng(1, 'a'), new SeededRng(1, 'b'), t);
  assert.ok(!d.joint);
  const outs = new Set<number>(t.output);
  for (let i = 0; i < 1000; i++) {
    d.next();
    assert.equal(d.input, 10);
    assert.ok(outs.has(d.output));
  }
});

test('changing the input spec leaves the output draws unchanged', () => {
  const out = parseLengthSpec('uniform:1:1000', '--output');
  const outputs = (inputSpec: string): number[] => {
    const d = new LengthDraw(
      parseLengthSpec(inputSpec, '--input'),
      out,
      new SeededRng(9, 'lengths'),
      new SeededRng(9, 'lengths.output'),
      shareGptLengths(),
    );
    return Array.from({ length: 500 }, () => (d.next(), d.output));
  };
  assert.deepEqual(outputs('fixed:5'), outputs('exp:300'));
  assert.deepEqual(outputs('fixed:5'), outputs('sharegpt'));
});
