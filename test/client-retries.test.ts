// Simulated clients keep their half of the contract: an attempt that times out before its
// first token is cancelled and retried (with backoff); one that already streamed tokens is
// cancelled and never retried; every attempt is counted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { run } from './helpers.ts';

const constant = { profile: 'const:step_ms=10', input: 'fixed:16', replicas: 1 };

test('a stream that produced tokens is cancelled at its timeout, never retried', () => {
  // 100 tokens take 1 s; the client gives up after 0.5 s, mid-stream.
  const r = run({
    ...constant,
    output: 'fixed:100',
    rate: 0.5,
    numRequests: 50,
    clientTimeoutMs: 500,
    maxAttempts: 3,
  });
  assert.equal(r.cancelled, 50);
  assert.equal(r.client.timeouts, 50);
  assert.equal(r.client.retries, 0);
  assert.equal(r.client.retry_amplification, 1);
  assert.equal(r.engine.kv_used_blocks_at_end, 0);
  assert.equal(r.latency_ms.itl.count, 0, "cancelled requests' gaps are not pooled");
});

test('an attempt stuck in the queue times out, is cancelled and retried', () => {
  // One sequence at a time, 200 ms each, 10 req/s offered: the queue grows and waits exceed 1 s.
  const r = run({
    ...constant,
    output: 'fixed:20',
    maxNumSeqs: 1,
    rate: 10,
    numRequests: 300,
    clientTimeoutMs: 1_000,
    maxAttempts: 3,
    backoffBaseMs: 100,
    backoffCapMs: 1_000,
  });
  assert.ok(r.client.retries > 0);
  assert.ok(r.client.attempts > r.offered.requests);
  assert.equal(
    r.client.retry_amplification,
    Math.round((r.client.attempts / r.offered.requests) * 1e6) / 1e6,
  );
  assert.equal(r.completed + r.cancelled, r.offered.requests);
  assert.ok(r.completed > 0 && r.cancelled > 0);
});

test('without a timeout nothing is cancelled or retried', () => {
  const r = run({
    ...constant,
    output: 'fixed:20',
    maxNumSeqs: 1,
    rate: 10,
    numRequests: 100,
    maxAttempts: 3,
  });
  assert.equal(r.completed, 100);
  assert.equal(r.client.attempts, 100);
});
