import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LlmRequest } from '../core/request/request.ts';
import type { Ticket } from '../core/queueing/ticket.ts';
import { RequestTracker } from './request-tracker.ts';
import { TokenClock } from './token-clock.ts';

const req: LlmRequest = {
  id: 'r1',
  arrivalMs: 0,
  inputTokens: 100,
  outputTokens: 11,
  tenant: 'default',
  sloClass: 'interactive',
  choices: 2,
};

/** The tracker of `req`, dispatched as asked on replica 0. */
function dispatched(): RequestTracker {
  const t = new RequestTracker(req, new TokenClock(), false);
  t.nextAttempt();
  const ticket = { replica: 0, req, asked: req, decision: { outcome: 'admit' } };
  t.dispatched(ticket as unknown as Ticket<RequestTracker>);
  return t;
}

test('several choices: each a stream with its own gaps; the p99 gap is the worst choice’s own', () => {
  const t = dispatched();
  const [other] = t.choices;
  assert.equal(other.id, '1_r1', "vLLM's name for a choice's own request");
  // Both stream 11 tokens 10 ms apart, but the first has one gap of 90 ms among its 10.
  t.started(10);
  other.started(10);
  for (let k = 1; k <= 10; k++) {
    t.recordToken(10 + 10 * k + (k >= 5 ? 80 : 0));
    other.recordToken(10 + 10 * k);
  }
  t.firstTokenMs = 10;
  const o = t.outcome('completed');
  assert.equal(o.outputTokens, 22);
  assert.equal(o.longestChoiceTokens, 11);
  // The first choice's own p99 (numpy's linear rule over its 10 gaps) is 10 + 0.91 × 80 = 82.8
  // ms, past the class's 80. Pooled with the other's ten gaps of 10 ms it would be 10 + 0.81 ×
  // 80 = 74.8, and pass where its client saw the stall.
  assert.ok(Math.abs((o.itlP99Ms ?? 0) - 82.8) < 1e-9, `${o.itlP99Ms}`);
  assert.equal(o.maxStallMs, 90);
  assert.equal(o.e2eMs, 190);
});
