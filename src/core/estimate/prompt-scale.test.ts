import assert from 'node:assert/strict';
import test from 'node:test';
import { HALF_LIFE, MIN_SAMPLES, PromptScale } from './prompt-scale.ts';

/** Prompts of 50 to 4,000 estimated tokens, in an order that mixes them. */
const sizes = (n: number) => Array.from({ length: n }, (_, i) => 50 + ((i * 617) % 3950));

test('a prompt is planned as estimated until its script has 20 counted prompts', () => {
  const scale = new PromptScale();
  const xs = sizes(MIN_SAMPLES);
  for (const x of xs.slice(0, -1)) scale.observe('latin', x, Math.round(0.77 * x) + 25);
  assert.equal(scale.tokens('latin', 1000), 1000);
  scale.observe('latin', xs.at(-1) as number, Math.round(0.77 * (xs.at(-1) as number)) + 25);
  assert.notEqual(scale.tokens('latin', 1000), 1000);
  assert.equal(scale.tokens('other', 1000), 1000, 'the other script has counted none');
});

test('a tokenizer and template are learned as a line: slope and the template’s own tokens', () => {
  const scale = new PromptScale();
  for (const x of sizes(200)) scale.observe('latin', x, Math.round(0.77 * x) + 25);
  const { latin } = scale.lines();
  assert.equal(latin.slope, 0.77);
  assert.equal(latin.intercept, 25);
  assert.equal(scale.tokens('latin', 1000), 795);
  assert.equal(scale.tokens('latin', 10), 33, 'a short prompt is mostly template');
});

test('scripts are learned apart: a Chinese prompt is not planned by English ones', () => {
  const scale = new PromptScale();
  for (const x of sizes(100)) {
    scale.observe('latin', x, Math.round(0.77 * x));
    scale.observe('other', x, Math.round(0.97 * x));
  }
  assert.equal(scale.tokens('latin', 2000), 1540);
  assert.equal(scale.tokens('other', 2000), 1940);
  assert.equal(scale.mostTokens(2000), 1940);
});

test('a backend that counts as the estimate leaves every prompt exactly as estimated', () => {
  const scale = new PromptScale();
  for (const x of sizes(500)) scale.observe('latin', x, x);
  for (let i = 0; i < 50; i++) scale.observe('other', 300, 300);
  assert.deepEqual(scale.lines().latin, {
    slope: 1,
    intercept: 0,
    weight: scale.lines().latin.weight,
  });
  for (const x of [1, 7, 333, 8191]) {
    assert.equal(scale.tokens('latin', x), x);
    assert.equal(scale.tokens('other', x), x);
  }
});

test('prompts all of one size give a ratio, not a line whose tilt nothing measured', () => {
  const scale = new PromptScale();
  for (let i = 0; i < 40; i++) scale.observe('latin', 500 + (i % 3), 400 + (i % 3));
  const { latin } = scale.lines();
  assert.equal(latin.intercept, 0);
  assert.ok(Math.abs(latin.slope - 0.8) < 0.002, `${latin.slope}`);
});

test('one hostile prompt cannot tilt the line: its count is held within 4 times its estimate', () => {
  const honest = new PromptScale();
  const attacked = new PromptScale();
  const xs = sizes(100);
  xs.forEach((x, i) => {
    honest.observe('latin', x, x);
    attacked.observe('latin', x, i === 50 ? 5_000_000 : x);
  });
  const drift = attacked.tokens('latin', 1000) / honest.tokens('latin', 1000);
  assert.ok(drift > 0.95 && drift < 1.1, `planned ${drift}× what it was`);
  // The line's slope stays within its bounds however the counts run.
  const wild = new PromptScale();
  for (const x of sizes(100)) wild.observe('other', x, 1);
  assert.equal(wild.lines().other.slope, 0.25);
});

test('a new tokenizer is followed: old counts weigh half as much every 256 prompts', () => {
  const scale = new PromptScale();
  for (const x of sizes(1000)) scale.observe('latin', x, x);
  for (const x of sizes(4 * HALF_LIFE)) scale.observe('latin', x, Math.round(1.5 * x));
  const slope = scale.lines().latin.slope;
  assert.ok(slope > 1.45 && slope <= 1.5, `${slope}`);
});

test('what is not a count teaches nothing', () => {
  const scale = new PromptScale();
  for (let i = 0; i < 100; i++) {
    scale.observe('latin', 100, 0);
    scale.observe('latin', 0, 100);
    scale.observe('latin', Number.NaN, 100);
  }
  assert.equal(scale.lines().latin.weight, 0);
  assert.equal(scale.tokens('latin', 100), 100);
});

test('a restarted scale takes up the sums where they were left, and fits on from them exactly', () => {
  const kept = new PromptScale();
  sizes(150).forEach((x, i) => kept.observe(i % 3 === 0 ? 'other' : 'latin', x, (3 * x) / 4 + 30));
  const saved = kept.sums();
  assert.deepEqual(Object.keys(saved), ['latin', 'other']);
  assert.equal(saved.latin?.pairs, 100);
  const restarted = new PromptScale();
  restarted.restore(structuredClone(saved));
  assert.deepEqual(restarted.lines(), kept.lines());
  assert.equal(restarted.tokens('latin', 1_000), 780);
  for (const x of sizes(40)) {
    kept.observe('latin', x, x);
    restarted.observe('latin', x, x);
  }
  assert.deepEqual(restarted.sums(), kept.sums());
  // A script that counted nothing is not kept, and restores to the estimate's own line.
  const latinOnly = new PromptScale();
  latinOnly.observe('latin', 100, 80);
  assert.deepEqual(Object.keys(latinOnly.sums()), ['latin']);
  restarted.restore(latinOnly.sums());
  assert.equal(restarted.tokens('latin', 1_000), 1_000, 'one pair: short of the line');
  assert.deepEqual(restarted.lines().other, kept.lines().other);
});
