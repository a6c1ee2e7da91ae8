import { test } from 'node:test';
import assert from 'node:assert/strict';
import { VirtualClock } from '../../runtime/virtual-clock.ts';
import { DEFAULT_EXCLUSIONS } from './default-slos.ts';
import { GapTally } from './gap-tally.ts';
import type { FinishedRequest } from './slo-events.ts';
import { SloTracker } from './slo-tracker.ts';
import type { SloDefinition } from './slo.ts';

const H = 3_600_000;

const CHAT: SloDefinition = {
  name: 'chat',
  population: { class: 'interactive' },
  windowMs: H,
  objectives: [
    { name: 'success', kind: 'success', target: 0.99 },
    { name: 'ttft', kind: 'ttft', thresholdMs: 2_000, target: 0.99 },
    { name: 'token_gap', kind: 'token_gap', thresholdMs: 80, target: 0.99 },
    { name: 'e2e', kind: 'e2e', thresholdMs: 10_000, target: 0.9 },
  ],
  exclusions: DEFAULT_EXCLUSIONS,
  revision: 'r1',
};
/** Everything acme sends on llama, excluding nothing. */
const ACME: SloDefinition = {
  name: 'acme',
  population: { tenant: 'acme', model: 'llama' },
  windowMs: 300_000,
  objectives: [{ name: 'served', kind: 'success', target: 0.9 }],
  exclusions: [],
  revision: 'r0',
};

function gaps(...ms: number[]): GapTally {
  const t = new GapTally([80]);
  for (const g of ms) t.add(g);
  return t;
}

const base: FinishedRequest = {
  sloClass: 'interactive',
  model: 'llama',
  tenant: 'acme',
  finish: 'completed',
  dispatched: true,
  ttftMs: 300,
  e2eMs: 1_000,
  gaps: gaps(20, 30, 90),
};

// What one request adds: `slo/objective good bad` for each event, `slo-exclusion` for each exclusion.
const table: Array<[string, FinishedRequest, string[]]> = [
  [
    'completed, one slow gap',
    base,
    ['chat/success 1 0', 'chat/ttft 1 0', 'chat/token_gap 2 1', 'chat/e2e 1 0', 'acme/served 1 0'],
  ],
  [
    'completed late',
    { ...base, ttftMs: 2_500, e2eMs: 12_000, gaps: gaps() },
    ['chat/success 1 0', 'chat/ttft 0 1', 'chat/e2e 0 1', 'acme/served 1 0'],
  ],
  [
    'refused for capacity: success alone',
    { ...base, finish: 'refused', reason: 'service_capacity', dispatched: false, ...none() },
    ['chat/success 0 1', 'acme/served 0 1'],
  ],
  [
    'expired in the queue',
    { ...base, finish: 'expired', reason: 'deadline', dispatched: false, ...none() },
    ['chat/success 0 1', 'acme/served 0 1'],
  ],
  [
    'failed mid-stream: what it measured counts, its end does not',
    { ...base, finish: 'failed', e2eMs: undefined, gaps: gaps(10) },
    ['chat/success 0 1', 'chat/ttft 1 0', 'chat/token_gap 1 0', 'acme/served 0 1'],
  ],
  [
    'its client left while it waited',
    { ...base, finish: 'client_closed', dispatched: false, ...none() },
    ['chat-client_closed_before_dispatch', 'acme/served 0 1'],
  ],
  [
    'its client left mid-stream',
    { ...base, finish: 'client_closed', e2eMs: undefined },
    ['chat-client_closed_streaming', 'acme/served 0 1'],
  ],
  [
    'refused for its tenant’s quota',
    { ...base, finish: 'refused', reason: 'tenant_tokens', dispatched: false, ...none() },
    ['chat-tenant_limits', 'acme/served 0 1'],
  ],
  [
    'its client’s own deadline passed: judged unless excluded',
    { ...base, finish: 'expired', reason: 'deadline_exceeded', dispatched: false, ...none() },
    ['chat/success 0 1', 'acme/served 0 1'],
  ],
  [
    'another class, another tenant: covered by neither',
    { ...base, sloClass: 'batch', tenant: 'zeta' },
    [],
  ],
  ['another model: not acme’s', { ...base, model: 'mistral', sloClass: 'batch' }, []],
];

function none(): Partial<FinishedRequest> {
  return { ttftMs: undefined, e2eMs: undefined, gaps: undefined };
}

for (const [name, request, want] of table) {
  test(`a request ${name}`, () => {
    const tracker = new SloTracker([CHAT, ACME], new VirtualClock());
    const r = tracker.record(request);
    const got = [
      ...r.excluded.map((e) => `${e.slo}-${e.exclusion}`),
      ...r.events.map((e) => `${e.slo}/${e.objective} ${e.good} ${e.bad}`),
    ];
    assert.deepEqual(got.sort(), [...want].sort());
  });
}

test('gaps are counted against the thresholds of the SLOs that cover the request', () => {
  const tracker = new SloTracker([CHAT, ACME], new VirtualClock());
  assert.deepEqual(tracker.gapThresholds(base), [80]);
  assert.deepEqual(tracker.gapThresholds({ ...base, sloClass: 'batch' }), []);
});

test('attainment and budget over the rolling window, on the clock', () => {
  const clock = new VirtualClock();
  const tracker = new SloTracker([CHAT, ACME], clock);
  const refused: FinishedRequest = {
    ...base,
    finish: 'refused',
    reason: 'no_ready_replica',
    ...none(),
  };
  // 98 served and 2 refused in the first minute, each recorded at its time on the clock.
  for (let i = 0; i < 100; i++) {
    clock.at(i * 600, () => tracker.record(i % 50 === 0 ? refused : { ...base, gaps: gaps(10) }));
  }
  const round = (x: number) => Math.round(x * 1e6) / 1e6;
  const seen = new Map<number, Record<string, number[]>>();
  for (const t of [240_000, 400_000, 2 * H]) {
    clock.at(t, () => {
      const rows = tracker
        .status()
        .map((s) => [
          `${s.slo}/${s.objective}`,
          [s.good, s.bad, s.attainment, s.budgetRemaining].map(round),
        ]);
      seen.set(t, Object.fromEntries(rows));
    });
  }
  clock.run();
  const first = seen.get(240_000) ?? {};
  // 2 bad of 100 where the budget is 1%: twice the budget spent.
  assert.deepEqual(first['chat/success'], [98, 2, 0.98, -1]);
  assert.deepEqual(first['chat/ttft'], [98, 0, 1, 1]);
  assert.deepEqual(first['acme/served'], [98, 2, 0.98, 0.8]);
  // acme's 5-minute window has moved past them; chat's hour has not.
  const later = seen.get(400_000) ?? {};
  assert.deepEqual(later['acme/served'], [0, 0, 1, 1]);
  assert.deepEqual(later['chat/success'], [98, 2, 0.98, -1]);
  assert.deepEqual(seen.get(2 * H)?.['chat/success'], [0, 0, 1, 1]);
});
