import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ScaleAdvisor } from './advisor.ts';
import { AUTOSCALERS } from './controllers.ts';

const limits = {
  minReplicas: 1,
  maxReplicas: 8,
  readyTimeMs: 120_000,
  tickMs: 5_000,
  scaleInWindowMs: 300_000,
  headroom: 1.5,
};
const fleet = {
  nowMs: 0,
  ready: 2,
  starting: 0,
  draining: 0,
  queued: 400,
  engineWaiting: 0,
  running: 100,
  kvUsage: 0.9,
  utilization: 0.95,
  fresh: true,
};

test('a frozen advisor keeps the groups there are, with reason frozen; thawed, it scales again', () => {
  const advisor = new ScaleAdvisor(AUTOSCALERS['hpa-utilization'], limits);
  advisor.frozen = true;
  const capacity = () => ({ rps: 5, streams: 64 });
  for (let i = 0; i < 6; i++) {
    const { decision } = advisor.decide({ ...fleet, nowMs: i * 5_000 }, capacity);
    assert.deepEqual(decision, { desired: 2, reason: 'frozen' });
  }
  advisor.frozen = false;
  const { decision } = advisor.decide({ ...fleet, nowMs: 30_000 }, capacity);
  assert.ok(decision.desired > 2, `busy GPUs scale out once thawed: ${JSON.stringify(decision)}`);
});
