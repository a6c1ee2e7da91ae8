// Every registered admission policy obeys the Admission rules: decisions are deterministic and
// pure (deciding twice changes nothing), and every rejection is well-formed — a closed-enum
// reason, a status in the allowed set, and a bounded Retry-After on 429 and 503.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMISSIONS } from './registry.ts';
import { type AdmissionContext } from './admission.ts';
import { REJECT_REASONS } from '../request/decision.ts';
import { presetPolicy } from '../config/presets.ts';
import { resolvePolicy } from '../config/policy.ts';
import type { LlmRequest } from '../request/request.ts';
import { demand, fleet } from './admission-test-kit.ts';

const CLASSES = ['interactive', 'reasoning', 'batch', 'best_effort'] as const;
const requests: LlmRequest[] = Array.from({ length: 60 }, (_, i) => ({
  id: `r${i}`,
  arrivalMs: i * 10,
  inputTokens: 10 + i * 137,
  outputTokens: 1 + i,
  maxTokens: i % 7 === 0 ? 9_000 : undefined,
  tenant: `t${i % 3}`,
  sloClass: CLASSES[i % 4],
}));

const policyFor = (type: string) =>
  type === 'admit-all'
    ? presetPolicy('baseline-vllm')
    : resolvePolicy({
        name: 'c',
        policy_revision: 'c@1',
        admission: { type },
        routing: { type: 'least-request' },
        tenants: { t0: { quotas: { max_concurrent_requests: 3 } }, t1: { classes: ['batch'] } },
      });

const ctxAt = (i: number): AdmissionContext => ({
  nowMs: i * 10,
  fleet: fleet({ wait: { requests: i, waitMs: i * 60 }, maxFreeKvTokens: 100_000 - i * 1_500 }),
  estimate: (req) =>
    demand({
      inputTokens: req.inputTokens,
      kvTokens: req.inputTokens + 400,
      prefillMs: req.inputTokens / 100,
    }),
});

for (const [type, make] of Object.entries(ADMISSIONS)) {
  test(`${type}: deterministic, pure decisions and well-formed rejections`, () => {
    const a = make(policyFor(type));
    const b = make(policyFor(type));
    const sa = a.initState();
    const sb = b.initState();
    requests.forEach((req, i) => {
      const ctx = ctxAt(i);
      const da = a.decide(sa, req, ctx);
      assert.deepEqual(a.decide(sa, req, ctx), da, 'deciding twice gives the same decision');
      assert.deepEqual(b.decide(sb, req, ctx), da);
      if (da.outcome === 'admit') {
        a.commit(sa, req, da, ctx);
        b.commit(sb, req, da, ctx);
      }
      if (da.outcome === 'reject') {
        assert.ok((REJECT_REASONS as readonly string[]).includes(da.reason), da.reason);
        assert.ok([400, 403, 404, 429, 503].includes(da.status));
        if (da.status === 429 || da.status === 503) {
          assert.ok(da.retryAfterMs !== undefined && da.retryAfterMs >= 1, `${da.reason} retry`);
          assert.ok(da.retryAfterMs <= 60_000);
        } else assert.equal(da.retryAfterMs, undefined);
      }
      if (da.outcome === 'defer') assert.ok(da.deadlineMs > req.arrivalMs);
    });
  });
}
