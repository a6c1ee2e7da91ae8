import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resilientFetch } from './resilient-fetch.ts';
import { CircuitBreaker } from '../core/resilience/circuit-breaker.ts';

interface Seen {
  attempt: string | null;
  key: string | null;
  deadline: string | null;
  body: string;
}

/** A scripted server and a clock that jumps over every sleep, so nothing waits for real. */
function harness(
  script: Array<number | 'network' | [number, string | Record<string, string>]>,
  options = {},
) {
  let now = 0;
  const sleeps: number[] = [];
  const seen: Seen[] = [];
  const f = resilientFetch({
    clock: { now: () => now },
    timers: {
      at: (atMs, fn) => {
        sleeps.push(atMs - now);
        now = atMs;
        void Promise.resolve().then(fn);
        return { cancel() {} };
      },
    },
    rng: {
      next: () => 0.5,
      fork() {
        return this;
      },
    },
    epochMs: () => 1_000_000,
    fetch: async (url, init) => {
      const h = new Headers(init?.headers);
      seen.push({
        attempt: h.get('x-goodput-attempt'),
        key: h.get('idempotency-key'),
        deadline: h.get('x-goodput-deadline-ms'),
        body: new TextDecoder().decode(init?.body as ArrayBuffer),
      });
      const step = script[Math.min(seen.length - 1, script.length - 1)];
      if (step === 'network') throw new TypeError('fetch failed');
      const [status, headers] = Array.isArray(step) ? step : [step, {}];
      return new Response('{}', {
        status,
        headers: typeof headers === 'string' ? { 'retry-after': headers } : headers,
      });
    },
    ...options,
  });
  const call = () => f('http://gw.test/v1/chat/completions', { method: 'POST', body: '{"x":1}' });
  return { call, seen, sleeps };
}

test('503 with Retry-After: waits at least that long, then the same key, deadline and body again', async () => {
  const h = harness([[503, '2'], 200]);
  const res = await h.call();
  assert.equal(res.status, 200);
  assert.deepEqual(
    h.seen.map((s) => s.attempt),
    ['1', '2'],
  );
  assert.equal(new Set(h.seen.map((s) => s.key)).size, 1);
  assert.deepEqual(
    h.seen.map((s) => s.deadline),
    ['1060000', '1060000'],
  );
  assert.deepEqual(
    h.seen.map((s) => s.body),
    ['{"x":1}', '{"x":1}'],
  );
  assert.ok(h.sleeps[0] >= 2_000);
});

test('backoff with full jitter grows, capped, and attempts stop at maxAttempts', async () => {
  const h = harness([503], { backoffBaseMs: 100, backoffCapMs: 300, maxAttempts: 4 });
  const res = await h.call();
  assert.equal(res.status, 503, 'the last answer is returned as is');
  assert.equal(h.seen.length, 4);
  assert.deepEqual(h.sleeps, [50, 100, 150]); // rng 0.5 × min(cap, base·2^(n−1))
});

test('what retrying cannot fix is returned at once', async () => {
  for (const status of [200, 400, 401, 404, 409, 500]) {
    const h = harness([status]);
    assert.equal((await h.call()).status, status);
    assert.equal(h.seen.length, 1, `${status}`);
  }
});

test('a refusal that says no retry can succeed is returned at once', async () => {
  for (const status of [429, 503, 504]) {
    const h = harness([[status, { 'x-should-retry': 'false' }], 200]);
    assert.equal((await h.call()).status, status);
    assert.equal(h.seen.length, 1, `${status}`);
  }
});

test('retry-after-ms is read before Retry-After: a 300 ms wait is not a second', async () => {
  const h = harness([[503, { 'retry-after': '1', 'retry-after-ms': '300' }], 200]);
  assert.equal((await h.call()).status, 200);
  assert.ok(h.sleeps[0] >= 300 && h.sleeps[0] < 1_000, `slept ${h.sleeps[0]} ms`);
});

test('a connection that failed before any response is retried', async () => {
  const h = harness(['network', 200]);
  assert.equal((await h.call()).status, 200);
  assert.equal(h.seen.length, 2);
});

test('an exhausted retry budget means no retries', async () => {
  const h = harness([503, 200], { retryBudgetRatio: 0, minRetries: 0 });
  assert.equal((await h.call()).status, 503);
  assert.equal(h.seen.length, 1);
});

test('circuit breaker: opens after consecutive failures, half-opens for one probe', () => {
  let now = 0;
  const changes: string[] = [];
  const b = new CircuitBreaker(
    { now: () => now },
    { failures: 3, openMs: 1_000, onChange: (from, to) => changes.push(`${from}→${to}`) },
  );
  for (let i = 0; i < 3; i++) {
    assert.ok(b.allows());
    b.record(false);
  }
  assert.equal(b.state, 'open');
  assert.equal(b.allows(), false);
  now = 1_000;
  assert.equal(b.state, 'half-open');
  assert.ok(b.allows());
  assert.equal(b.allows(), false, 'one probe at a time');
  b.abandon();
  assert.ok(b.allows(), 'a probe that ended without a verdict lets the next one go');
  b.record(false);
  assert.equal(b.state, 'open', 'a failed probe opens it again');
  assert.equal(b.msUntilProbe(), 1_000);
  now = 2_000;
  assert.ok(b.allows());
  b.record(true);
  assert.equal(b.state, 'closed');
  assert.equal(b.msUntilProbe(), 0);
  assert.deepEqual(changes, [
    'closed→open',
    'open→half-open',
    'half-open→open',
    'open→half-open',
    'half-open→closed',
  ]);
});
