import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fewerGroupsHold } from './fewer-groups.ts';

const base = {
  groups: 3,
  capacityRps: 4,
  streamsPerGroup: 64,
  levelRps: 8,
  trendRpsPerS: 0,
  queued: 0,
  running: 100,
  horizonMs: 300_000,
  drainMs: 30_000,
};

test('fewer groups: a steady load within their capacity holds', () => {
  assert.equal(fewerGroupsHold(base), true);
});

test('fewer groups: a trend that outgrows them within the window does not', () => {
  // 8 req/s rising 0.04 req/s each second passes the 12 req/s they serve after 100 s; by the
  // window's end 800 requests wait, 67 s of their service.
  assert.equal(fewerGroupsHold({ ...base, trendRpsPerS: 0.04 }), false);
  assert.equal(fewerGroupsHold({ ...base, trendRpsPerS: 0.005 }), true, 'to 9.5 req/s: fits');
});

test('fewer groups: streams beyond what they hold, or a backlog, must drain in time', () => {
  // 3 groups hold 192 streams; 700 running leave 508 to wait: 508 / (12 − 8) s ≫ 30 s.
  assert.equal(fewerGroupsHold({ ...base, running: 700 }), false);
  assert.equal(fewerGroupsHold({ ...base, queued: 30 }), true, '30 queued drain in 7.5 s');
  assert.equal(fewerGroupsHold({ ...base, groups: 0 }), false);
});
