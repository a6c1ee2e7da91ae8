// The goodput admission controller's outcomes: admit, degrade by the class's ladder, defer,
// reject — table-driven over fleet states from the test kit.
import { test } from 'node:test';
import { resolveTenants } from '../config/tenant-schema.ts';
import assert from 'node:assert/strict';
import { resolvePolicy } from '../config/policy.ts';
import type { AdmissionContext } from './admission.ts';
import { goodputAdmission } from './goodput-admission.ts';
import { demand, fleet, request } from './admission-test-kit.ts';
import type { LlmRequest } from '../request/request.ts';
import type { FleetLoad } from '../estimate/fleet-load.ts';

const policy = resolvePolicy({
  name: 't',
  policy_revision: 't@1',
  admission: { type: 'goodput' },
  routing: { type: 'least-request' },
  classes: {
    reasoning: { degrade: [{ level: 2 }, { level: 4, mode: 'reject' }] },
    batch: { degrade: [{ level: 4, mode: 'reject' }] },
    best_effort: {
      degrade: [
        { level: 1, min_output_tokens: 50 },
        { level: 4, mode: 'defer' },
      ],
    },
  },
});

/** Demand follows the request: KV = input + min(400, max_tokens); prefill 10 ms per 1k tokens. */
function ctx(
  load: Partial<FleetLoad> & { wait?: { requests: number; waitMs: number } },
): AdmissionContext {
  return {
    nowMs: 0,
    fleet: fleet(load),
    estimate: (req: LlmRequest) => {
      const p90 = Math.min(400, req.maxTokens ?? Infinity);
      const p50 = Math.min(100, p90);
      return demand({
        inputTokens: req.inputTokens,
        prefillMs: req.inputTokens / 100,
        output: { p10: Math.min(20, p50), p50, p90, source: 'class' },
        kvTokens: req.inputTokens + p90,
      });
    },
  };
}

const rows: Array<{
  name: string;
  req: Partial<LlmRequest>;
  load: Parameters<typeof ctx>[0];
  expect: Record<string, unknown>;
}> = [
  { name: 'fits now', req: {}, load: {}, expect: { outcome: 'admit' } },
  {
    name: 'interactive past its deadline is rejected with Retry-After',
    req: {},
    load: { wait: { requests: 40, waitMs: 3_000 } },
    expect: { outcome: 'reject', reason: 'deadline', status: 503, retryAfterMs: 3_000 },
  },
  {
    name: 'interactive with no room in KV',
    req: {},
    load: { maxFreeKvTokens: 5_000, wait: { requests: 3, waitMs: 700 } },
    expect: { outcome: 'reject', reason: 'kv_capacity', status: 503, retryAfterMs: 700 },
  },
  {
    name: 'best-effort waits for capacity in the deferred queue',
    req: { sloClass: 'best_effort' },
    load: { wait: { requests: 5, waitMs: 400 } },
    expect: { outcome: 'defer', reason: 'service_capacity', deadlineMs: 600_000 },
  },
  {
    name: 'batch whose ladder says reject is refused for capacity, with Retry-After',
    req: { sloClass: 'batch' },
    load: { wait: { requests: 5, waitMs: 400 } },
    expect: { outcome: 'reject', reason: 'service_capacity', status: 503, retryAfterMs: 500 },
  },
  {
    name: 'best-effort short of KV has its output capped (level 1)',
    req: { sloClass: 'best_effort' },
    // Reserve 5,000 of 100,000: room for 1,300 tokens; 1,000 prompt + 200 output fit.
    load: { maxFreeKvTokens: 6_300 },
    expect: { outcome: 'admit', degradation: { level: 1, maxTokens: 200 } },
  },
  {
    name: 'best-effort that no cap saves is deferred (level 4)',
    req: { sloClass: 'best_effort' },
    load: { maxFreeKvTokens: 6_000 },
    expect: { outcome: 'defer', deadlineMs: 600_000 },
  },
  {
    name: 'reasoning drops its optional context to make its deadline (level 2)',
    req: { sloClass: 'reasoning', inputTokens: 7_000, optionalInputTokens: 6_000 },
    load: { maxFreeKvTokens: 12_000 },
    expect: { outcome: 'admit', degradation: { level: 2, droppedInputTokens: 6_000 } },
  },
  {
    name: 'reasoning without optional context follows its ladder to reject (level 4)',
    req: { sloClass: 'reasoning', inputTokens: 7_000 },
    load: { maxFreeKvTokens: 12_000, wait: { requests: 1, waitMs: 100 } },
    expect: { outcome: 'reject', reason: 'kv_capacity', status: 503 },
  },
  {
    name: 'a model the fleet does not serve',
    req: { tenant: 'nobody-special', sloClass: 'interactive', model: 'other' },
    load: {},
    expect: { outcome: 'reject', reason: 'unknown_model', status: 404 },
  },
];

for (const row of rows) {
  test(`goodput admission: ${row.name}`, () => {
    const a = goodputAdmission(policy);
    const d = a.decide(a.initState(), request(row.req), ctx(row.load));
    const picked = Object.fromEntries(
      Object.keys(row.expect).map((k) => [k, (d as unknown as Record<string, unknown>)[k]]),
    );
    assert.deepEqual(picked, row.expect);
  });
}

test("retries, token quotas and concurrency are the door's to charge, never admission's", () => {
  const tenants = resolveTenants({
    t1: { quotas: { tokens_per_window: 1, max_concurrent_requests: 1 }, retry_budget_ratio: 0 },
  });
  const a = goodputAdmission({ ...policy, tenants });
  const s = a.initState();
  const c = ctx({});
  for (let i = 0; i < 40; i++) {
    const req = request({ id: `r${i}`, tenant: 't1', attempt: 2 });
    const d = a.decide(s, req, c);
    assert.equal(d.outcome, 'admit', `request ${i}: ${JSON.stringify(d)}`);
    a.commit(s, req, d, c);
  }
});

test("a client deadline inside deadlineMarginMs is never admitted, whatever the fleet or the request: the up-front refusal is the gate's own", () => {
  const a = goodputAdmission(policy);
  const margin = a.deadlineMarginMs ?? 0;
  assert.equal(margin, 50);
  const state = a.initState();
  for (const cls of ['interactive', 'reasoning', 'batch', 'best_effort'] as const) {
    for (const load of [{}, { wait: { requests: 3, waitMs: 200 } }]) {
      for (const ahead of [1, 25, 50]) {
        for (const maxTokens of [1, 64, undefined]) {
          const req = request({ sloClass: cls, inputTokens: 1, maxTokens, deadlineMs: ahead });
          const d = a.decide(state, req, ctx(load));
          assert.notEqual(d.outcome, 'admit', `${cls} ${ahead} ms ahead, max_tokens ${maxTokens}`);
        }
      }
    }
  }
});
