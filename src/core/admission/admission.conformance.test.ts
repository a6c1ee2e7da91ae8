// Every registered admission policy obeys the Admission rules: deterministic given state and
// inputs, state is plain data, and every rejection is well-formed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMISSIONS } from './registry.ts';
import { REJECT_REASONS } from './admission.ts';
import type { LlmRequest } from '../request/request.ts';

const requests: LlmRequest[] = Array.from({ length: 50 }, (_, i) => ({
  id: `r${i}`,
  arrivalMs: i * 10,
  inputTokens: 10 + i * 37,
  outputTokens: 1 + i,
  tenant: `t${i % 3}`,
  sloClass: (['interactive', 'reasoning', 'batch', 'best_effort'] as const)[i % 4],
}));

for (const [type, make] of Object.entries(ADMISSIONS)) {
  test(`${type}: deterministic, plain-data state, well-formed rejections`, () => {
    const a = make();
    const b = make();
    let sa = a.initState();
    const sb = b.initState();
    for (const req of requests) {
      sa = JSON.parse(JSON.stringify(sa ?? null));
      const da = a.decide(sa, req, { nowMs: req.arrivalMs });
      assert.deepEqual(da, b.decide(sb, req, { nowMs: req.arrivalMs }));
      if (da.outcome === 'reject') {
        assert.ok((REJECT_REASONS as readonly string[]).includes(da.reason));
        assert.ok(da.status === 429 || da.status === 503);
        assert.ok(da.retryAfterMs >= 0);
      }
    }
  });
}
