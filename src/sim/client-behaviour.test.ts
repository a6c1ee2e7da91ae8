import { test } from 'node:test';
import assert from 'node:assert/strict';
import { retryDelayMs, type ClientBehaviour } from './client-behaviour.ts';
import { SeededRng } from '../runtime/seeded-rng.ts';

const client: ClientBehaviour = {
  retryMode: 'disciplined',
  maxAttempts: 5,
  backoffBaseMs: 100,
  backoffCapMs: 1_000,
};

test('full jitter: uniform in [0, min(cap, base · 2^(attempt − 1))]', () => {
  const rng = new SeededRng(1);
  for (const [attempt, ceiling] of [
    [1, 100],
    [2, 200],
    [3, 400],
    [4, 800],
    [5, 1_000],
    [9, 1_000],
  ] as const) {
    let max = 0;
    let sum = 0;
    for (let i = 0; i < 20_000; i++) {
      const d = retryDelayMs(client, attempt, rng);
      assert.ok(d >= 0 && d <= ceiling, `attempt ${attempt}: ${d}`);
      max = Math.max(max, d);
      sum += d;
    }
    assert.ok(max > ceiling * 0.99, 'reaches the ceiling');
    assert.ok(Math.abs(sum / 20_000 - ceiling / 2) < ceiling * 0.02, 'mean is half the ceiling');
  }
});

test('never sooner than Retry-After', () => {
  const rng = new SeededRng(2);
  for (let i = 0; i < 1_000; i++) assert.ok(retryDelayMs(client, 1, rng, 5_000) >= 5_000);
  const mixed = Array.from({ length: 1_000 }, () => retryDelayMs(client, 4, rng, 300));
  assert.ok(
    mixed.every((d) => d >= 300) && mixed.some((d) => d > 300),
    'jitter above Retry-After still applies',
  );
});
