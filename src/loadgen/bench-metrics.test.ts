import assert from 'node:assert/strict';
import { test } from 'node:test';
import { benchMetrics, latencyOf } from './bench-metrics.ts';
import type { CallRecord } from './call-record.ts';
import { parseGoodputSpec } from './goodput-spec.ts';

const base = { tenant: 't', sloClass: 'interactive', promptTokens: 100 };
const records: CallRecord[] = [
  // TTFT 100, gaps 10 and 20, E2E 130, TPOT (130 − 100) / 2 = 15.
  {
    ...base,
    id: 'a',
    dueMs: 0,
    sentMs: 0,
    endMs: 131,
    ok: true,
    status: 200,
    tokenTimesMs: [100, 110, 130],
    outputTokens: 3,
  },
  // One token: TTFT = E2E = 50, no TPOT, no gap.
  {
    ...base,
    id: 'b',
    dueMs: 1000,
    sentMs: 1000,
    endMs: 1051,
    ok: true,
    status: 200,
    tokenTimesMs: [1050],
    outputTokens: 1,
  },
  // Refused, sent 4 ms late.
  {
    ...base,
    id: 'c',
    dueMs: 1496,
    sentMs: 1500,
    endMs: 1510,
    ok: false,
    status: 429,
    reason: 'rate_limited',
    tokenTimesMs: [],
    outputTokens: 0,
  },
];

test('bench metrics: vLLM definitions and names over completed requests', () => {
  const m = benchMetrics({ records, startMs: 0, endMs: 2000, offered: 3, percentiles: [99] });
  assert.equal(m.duration, 2);
  assert.equal(m.completed, 2);
  assert.equal(m.failed, 1);
  assert.equal(m.total_input_tokens, 200);
  assert.equal(m.total_output_tokens, 4);
  assert.equal(m.request_throughput, 1);
  assert.equal(m.output_throughput, 2);
  assert.equal(m.request_goodput, null);
  assert.equal(m.mean_ttft_ms, 75);
  assert.equal(m.median_ttft_ms, 75);
  assert.equal(m.std_ttft_ms, 25);
  assert.equal(m.p99_ttft_ms, 50 + 0.99 * 50);
  assert.equal(m.mean_tpot_ms, 15);
  assert.equal(m.mean_itl_ms, 15);
  assert.equal(m.p99_itl_ms, 10 + 0.99 * 10);
  assert.equal(m.median_e2el_ms, 90);
  assert.equal(m.max_output_tokens_per_s, 3);
  assert.equal(m.max_concurrent_requests, 2);
  assert.deepEqual(m.failed_by_reason, { rate_limited: 1 });
  assert.deepEqual(m.failed_by_status, { '429': 1 });
  assert.equal(m.max_send_lag_ms, 4);
});

test('bench metrics: goodput counts completed requests inside every bound, over the run', () => {
  const slo = parseGoodputSpec('ttft:80');
  const m = benchMetrics({ records, startMs: 0, endMs: 2000, offered: 3, slo, percentiles: [99] });
  assert.equal(m.request_goodput, 0.5);
  assert.equal(m.attainment_offered, 1 / 3);
  assert.equal(m.attainment_completed, 1 / 2);
  const tpot = benchMetrics({
    records,
    startMs: 0,
    endMs: 2000,
    offered: 3,
    slo: parseGoodputSpec('ttft:200 tpot:14'),
    percentiles: [99],
  });
  assert.equal(tpot.request_goodput, 0.5, 'a one-token answer has TPOT 0; 15 ms misses 14');
});

test('bench metrics: percentile keys as vLLM writes them', () => {
  const m = benchMetrics({ records, startMs: 0, endMs: 2000, offered: 3, percentiles: [50, 99.9] });
  assert.ok('p50_ttft_ms' in m && 'p99.9_e2el_ms' in m && !('p99_ttft_ms' in m));
});

test('goodput spec: bad specs name the flag and the value', () => {
  assert.deepEqual(parseGoodputSpec('ttft:2000,tpot:80,e2el:9000'), {
    ttftMs: 2000,
    tpotMs: 80,
    e2elMs: 9000,
  });
  for (const bad of ['', 'ttft', 'ttft:-1', 'ttft:abc', 'gap:5', 'ttft:1,ttft:2', 'ttft:1:2'])
    assert.throws(() => parseGoodputSpec(bad), /--goodput: expected/, bad);
});

test('bench metrics: a request of several choices has each choice its own gaps, TPOT the longest', () => {
  // Two choices a step apart, interleaved: 20 ms gaps within each, 0–1 ms between them.
  const several: CallRecord = {
    ...base,
    id: 'n',
    dueMs: 0,
    sentMs: 0,
    endMs: 200,
    ok: true,
    status: 200,
    tokenTimesMs: [100, 101, 120, 121, 140, 141, 160],
    tokenChoices: [0, 1, 0, 1, 0, 1, 0],
    outputTokens: 7,
  };
  const l = latencyOf(several);
  assert.deepEqual(
    [...(l?.gapsMs ?? [])].sort((a, b) => a - b),
    [20, 20, 20, 20, 20],
  );
  assert.equal(l?.ttftMs, 100);
  assert.equal(l?.e2elMs, 160);
  // Over the first choice's 4 chunks, not all 7 tokens: (160 − 100) / 3.
  assert.equal(l?.tpotMs, 20);
});
