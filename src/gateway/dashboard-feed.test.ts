import assert from 'node:assert/strict';
import { test } from 'node:test';
import { unreadRecord, type DecisionRecord } from '../core/observe/decision-record.ts';
import type { RequestOutcome } from '../core/observe/request-outcome.ts';
import { DashboardFeed } from './dashboard-feed.ts';

const clock = { ms: 0, now: () => clock.ms };

function admitted(id: string, atMs: number, tenant = 't'): DecisionRecord {
  return {
    ...unreadRecord({
      requestId: id,
      tenant,
      cls: 'interactive',
      revision: 'p@1',
      atMs,
      reason: 'invalid_request',
      status: 400,
    }),
    admission: {
      result: 'admit',
      deferred: false,
      reason: null,
      status: null,
      retry_after_ms: null,
      kept_turn: false,
      slack_ms: null,
      predicted_ttft_ms: null,
      predicted_wait_ms: null,
      queue_target_ms: null,
      degrade_level: null,
      degraded_max_tokens: null,
      dropped_input_tokens: null,
    },
  };
}

const served = (e2eMs: number, tenant = 't'): RequestOutcome => ({
  id: 'x',
  tenant,
  sloClass: 'interactive',
  state: 'completed',
  admitted: true,
  inputTokens: 10,
  outputTokens: 5,
  cachedTokens: 0,
  ttftMs: 10,
  e2eMs,
  attempts: 1,
  preemptions: 0,
});

/**
 * The headline's offered, admitted, rejected, failed, attainment over offered and over admitted.
 */
function headline(feed: DashboardFeed): string[] {
  return feed.doc(1).headline.rows[0].slice(0, 6);
}

test('what could not be read as a request is not offered load', () => {
  clock.ms = 0;
  const feed = new DashboardFeed(clock, { policy: 'goodput', model: 'm' }, 60_000);
  for (let i = 0; i < 10; i++) {
    const unread = { requestId: `u${i}`, tenant: null, cls: null, revision: 'p@1', atMs: 5 };
    feed.decision(unreadRecord({ ...unread, reason: 'unauthenticated', status: 401 }));
  }
  assert.deepEqual(headline(feed), ['0', '0', '0', '0', '—', '—']);
  feed.decision(admitted('a', 10));
  clock.ms = 100;
  feed.completed(served(90), 100, true);
  assert.deepEqual(headline(feed), ['1', '1', '0', '0', '100.00%', '100.00%']);
  const outcomes = feed
    .doc(1)
    .sections.flatMap((s) => s.charts)
    .find((c) => c.id === 'outcomes-0');
  assert.deepEqual(
    outcomes?.series.map((s) => s.label),
    ['admit'],
  );
});

test('a request offered before the window rolled is not good in the next: attainment stays within 100%', () => {
  clock.ms = 0;
  const feed = new DashboardFeed(clock, { policy: 'goodput', model: 'm' }, 60_000);
  for (let i = 0; i < 10; i++) feed.decision(admitted(`a${i}`, 59_000));
  clock.ms = 60_500;
  // They end in the next window: good, but offered in the last.
  for (let i = 0; i < 10; i++) feed.completed(served(1_500), 60_500, true);
  feed.decision(admitted('b', 60_500));
  clock.ms = 60_600;
  feed.completed(served(100), 60_600, true);
  assert.deepEqual(headline(feed), ['1', '1', '0', '0', '100.00%', '100.00%']);
  // Goodput over a window a tenth of a second old is over a second, not a tenth.
  assert.equal(feed.doc(1).headline.rows[0][6], '1.00');
});

test("a tenant may be named as an object's own properties are: constructor, __proto__", () => {
  clock.ms = 0;
  const feed = new DashboardFeed(clock, { policy: 'goodput', model: 'm' }, 60_000);
  for (const tenant of ['constructor', '__proto__', 'alice']) {
    feed.decision(admitted(tenant, 10, tenant));
    feed.completed(served(5, tenant), 20, true);
  }
  const share = feed
    .doc(1)
    .sections.flatMap((s) => s.charts)
    .find((c) => c.id.startsWith('tenant-share'));
  assert.deepEqual(share?.series.map((s) => s.label).sort(), ['__proto__', 'alice', 'constructor']);
  for (const s of share?.series ?? []) {
    assert.ok(
      s.points.some(([, y]) => y !== null && Math.abs(y - 1 / 3) < 1e-9),
      `${s.label} has its third`,
    );
  }
});

test("the headline's TTFT percentiles are read within their bins, not at a bin's upper edge", () => {
  clock.ms = 0;
  const feed = new DashboardFeed(clock, { policy: 'goodput', model: 'm' }, 60_000);
  for (let i = 0; i < 1_000; i++) {
    feed.decision(admitted(`r${i}`, 1));
    feed.completed({ ...served(500), ttftMs: 100 + i * 0.1 }, 1_000, true);
  }
  const [p50, p99] = feed.doc(1).headline.rows[0][7].split(' / ').map(Number);
  assert.ok(Math.abs(p50 - 150) / 150 < 0.04, `p50 ${p50}`);
  assert.ok(Math.abs(p99 - 199) / 199 < 0.04, `p99 ${p99}`);
});

test('an attempt admitted and then not served is counted failed: expired in the queue, or its backend failed', () => {
  clock.ms = 0;
  const feed = new DashboardFeed(clock, { policy: 'goodput', model: 'm' }, 60_000);
  const expired = admitted('q', 10);
  feed.decision({ ...expired, admission: { ...expired.admission, result: 'expire' } });
  const ended = (state: 'failed' | 'completed', tried?: true) => ({
    request_id: 'b',
    tenant: 't',
    class: 'interactive',
    at_ms: 20,
    outcome: {
      state,
      output_tokens: 0,
      ttft_ms: null,
      predicted_ttft_ms: null,
      itl_p99_ms: null,
      max_gap_ms: null,
      relay_max_ms: null,
      e2e_ms: null,
      good: false,
      missed: 'not_completed' as const,
      ...(tried ? { tried_again: tried } : {}),
    },
  });
  // Attempts, as /metrics counts them: one tried again elsewhere failed too.
  feed.ended(ended('failed', true));
  feed.ended(ended('failed'));
  feed.ended(ended('completed'));
  assert.equal(headline(feed)[3], '3');
});
