import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TenantBudgets } from './tenant-budgets.ts';
import { BUDGET_GATE, budgetGate } from './budget-gate.ts';
import { breachOf, type RootTree } from './root-trees.ts';
import { PASS, type GateInput, type GateVerdict } from '../gate.ts';
import type { RejectReason } from '../../request/decision.ts';
import { DEFAULT_SLO_CLASSES } from '../../request/slo-classes.ts';
import { DEFAULT_TENANT } from '../../request/tenant.ts';
import type { RootBudget, TenantPolicy, TenantQuotas } from '../../request/tenant.ts';
import type { LlmRequest } from '../../request/request.ts';
import type { Demand } from '../../request/demand.ts';
import type { FleetLoad } from '../../estimate/fleet-load.ts';

const WINDOW = 60_000;
/** The budget gate never reads the fleet; a placeholder keeps the input well-typed. */
const NO_FLEET = {} as FleetLoad;

function policy(quotas: Partial<TenantQuotas>, rootBudget?: RootBudget): TenantPolicy {
  const base = { ...DEFAULT_TENANT, name: 't1', quotas: { windowMs: WINDOW, ...quotas } };
  return rootBudget === undefined ? base : { ...base, rootBudget };
}

interface Probe {
  id: string;
  nowMs?: number;
  session?: string;
  parentId?: string;
  rootId?: string;
  /** Defaults: 100 in + p50 100 = 200 tokens; GPU 20 + 200 × 100/200 = 120 ms. */
  inputTokens?: number;
  p50?: number;
}

function input(tenant: TenantPolicy | undefined, p: Probe): GateInput {
  const nowMs = p.nowMs ?? 0;
  const inputTokens = p.inputTokens ?? 100;
  const p50 = p.p50 ?? 100;
  const req: LlmRequest = {
    id: p.id,
    arrivalMs: nowMs,
    inputTokens,
    outputTokens: p50,
    tenant: 't1',
    sloClass: 'interactive',
    session: p.session,
    parentId: p.parentId,
    rootId: p.rootId,
  };
  const demand: Demand = {
    inputTokens,
    prefixHitTokens: 0,
    prefillMs: 20,
    prefillSteps: 1,
    firstDecodeMs: 10,
    handoverMs: 0,
    output: { p10: 1, p50, p90: 2 * p50, source: 'prior' },
    kvTokens: inputTokens + 2 * p50,
    kvBytes: 0,
    workP90Ms: 20 + 2 * p50,
  };
  return { req, demand, cls: DEFAULT_SLO_CLASSES.interactive, tenant, nowMs, fleet: NO_FLEET };
}

/** Budgets with `setup` committed in order, each at its own `nowMs`. */
function withCommitted(tenant: TenantPolicy, setup: Probe[]): TenantBudgets {
  const b = new TenantBudgets();
  for (const p of setup) b.commit(input(tenant, p));
  return b;
}

function assertRejected(v: GateVerdict, reason: RejectReason, boundMs = WINDOW): number {
  assert.ok(!v.pass, `expected ${reason}, got pass`);
  assert.equal(v.reason, reason);
  assert.equal(v.status, 429);
  const retry = v.retryAfterMs ?? NaN;
  assert.ok(Number.isFinite(retry) && retry >= 1 && retry <= boundMs, `retry ${retry}`);
  return retry;
}

const root = { id: 'r', rootId: 'r' };
const child = (id: string, nowMs = 0) => ({ id, parentId: 'r', rootId: 'r', nowMs });

const cases: {
  name: string;
  tenant: TenantPolicy;
  setup: Probe[];
  probe: Probe;
  reason?: RejectReason;
  retryMs?: number;
}[] = [
  {
    name: 'a new session over the limit',
    tenant: policy({ maxConcurrentSessions: 1 }),
    setup: [{ id: 'a', session: 's1' }],
    probe: { id: 'b', session: 's2' },
    reason: 'tenant_sessions',
    retryMs: 1000,
  },
  {
    name: 'an active session passes',
    tenant: policy({ maxConcurrentSessions: 1 }),
    setup: [{ id: 'a', session: 's1' }],
    probe: { id: 'b', session: 's1' },
  },
  {
    name: 'no session passes',
    tenant: policy({ maxConcurrentSessions: 1 }),
    setup: [{ id: 'a', session: 's1' }],
    probe: { id: 'b' },
  },
  {
    // 2 × 120 ms taken, 60 left; 120 needed: 60 more at 300/60000 per ms.
    name: 'GPU time',
    tenant: policy({ gpuMsPerWindow: 300 }),
    setup: [{ id: 'a' }, { id: 'b' }],
    probe: { id: 'c' },
    reason: 'tenant_gpu_time',
    retryMs: 12_000,
  },
  {
    name: 'root: branches',
    tenant: policy({}, { maxBranches: 1 }),
    setup: [root, child('c1')],
    probe: child('c2'),
    reason: 'root_budget',
    retryMs: WINDOW,
  },
  {
    name: 'root: tokens (root 200 + child 200 + 200 > 500)',
    tenant: policy({}, { maxTokens: 500 }),
    setup: [root, child('c1')],
    probe: child('c2'),
    reason: 'root_budget',
    retryMs: WINDOW,
  },
  {
    name: 'root: wall',
    tenant: policy({}, { maxWallMs: 10_000 }),
    setup: [root],
    probe: child('c1', 10_000),
    reason: 'root_budget',
    retryMs: WINDOW,
  },
  {
    name: 'root: just inside the wall',
    tenant: policy({}, { maxWallMs: 10_000 }),
    setup: [root],
    probe: child('c1', 9_999),
  },
  {
    name: 'the root itself is never refused by its tree',
    tenant: policy({}, { maxBranches: 0, maxTokens: 1 }),
    setup: [],
    probe: root,
  },
  {
    name: 'an orphan child (root never seen) is outside tree accounting',
    tenant: policy({}, { maxBranches: 0, maxTokens: 1 }),
    setup: [{ id: 'other', rootId: 'other' }],
    probe: child('c1'),
  },
];

for (const c of cases) {
  test(`check: ${c.name}`, () => {
    const b = withCommitted(c.tenant, c.setup);
    const v = b.check(input(c.tenant, c.probe));
    if (c.reason === undefined) return assert.deepEqual(v, PASS);
    const retry = assertRejected(v, c.reason);
    if (c.retryMs !== undefined) assert.equal(retry, c.retryMs);
  });
}

test('each tree limit is the one breached', () => {
  const tree: RootTree = { openedMs: 0, branches: 2, tokens: 400, inFlight: 1, lastActiveMs: 0 };
  const cases: [RootBudget, number, string | undefined][] = [
    [{ maxBranches: 2 }, 0, 'branches'],
    [{ maxBranches: 3 }, 0, undefined],
    [{ maxTokens: 500 }, 0, 'tokens'],
    [{ maxTokens: 600 }, 0, undefined],
    [{ maxWallMs: 5_000 }, 5_000, 'wall'],
    [{ maxWallMs: 5_000 }, 4_999, undefined],
  ];
  for (const [budget, nowMs, breach] of cases) {
    assert.equal(breachOf(tree, budget, 200, nowMs), breach, JSON.stringify(budget));
  }
});

test('unknown tenant passes and leaves no state', () => {
  const b = new TenantBudgets();
  assert.deepEqual(b.check(input(undefined, { id: 'a' })), PASS);
  b.commit(input(undefined, { id: 'a' }));
  assert.deepEqual(b.snapshot(), {});
});

test('Retry-After is bounded and grows with the GPU time asked for', () => {
  // 20 + 900 GPU ms taken: under 100 left in the bucket.
  const tenant = policy({ gpuMsPerWindow: 1000 });
  const b = withCommitted(tenant, [{ id: 'a', p50: 900 }]);
  let last = 0;
  for (const p50 of [200, 300, 500, 1000, 1500, 5000, 50_000]) {
    const v = b.check(input(tenant, { id: 'x', inputTokens: 0, p50 }));
    const retry = assertRejected(v, 'tenant_gpu_time');
    assert.ok(retry >= last, `p50 ${p50}: ${retry} < ${last}`);
    last = retry;
  }
  assert.equal(last, WINDOW, 'more than a whole window can hold waits exactly the window');
});

test('settle turns an under-estimate of GPU time into debt that refill repays first', () => {
  const tenant = policy({ gpuMsPerWindow: 300 });
  const b = withCommitted(tenant, [{ id: 'a' }]); // 120 ms estimated
  b.settle(input(tenant, { id: 'a' }).req, 100, 520, 0); // 400 ms over
  assert.equal(b.snapshot().t1.gpu?.level, -220);
  // 340 short at 300/60000 per ms is 68 s: the header says one window, the next answer the rest.
  assert.equal(assertRejected(b.check(input(tenant, { id: 'b' })), 'tenant_gpu_time'), WINDOW);
  const later = b.check(input(tenant, { id: 'b', nowMs: WINDOW }));
  assert.equal(assertRejected(later, 'tenant_gpu_time'), 8_000);
  assert.deepEqual(b.check(input(tenant, { id: 'b', nowMs: 68_000 })), PASS);
});

test('settle gives back an over-estimate, never above capacity', () => {
  const tenant = policy({ gpuMsPerWindow: 1000 });
  const b = withCommitted(tenant, [{ id: 'a' }, { id: 'b' }]); // 240 GPU ms
  b.settle(input(tenant, { id: 'a' }).req, 0, 20, 0); // 20 GPU ms actual
  assert.equal(b.snapshot().t1.gpu?.level, 860);
  b.settle(input(tenant, { id: 'b' }).req, 0, 0, WINDOW); // refilled to 1000 by then
  assert.equal(b.snapshot().t1.gpu?.level, 1000);
});

test('settle releases sessions; settling twice or unknown ids changes nothing', () => {
  const tenant = policy({ maxConcurrentSessions: 1 });
  const b = withCommitted(tenant, [{ id: 'a', session: 's1' }]);
  assertRejected(b.check(input(tenant, { id: 'b', session: 's2' })), 'tenant_sessions');
  b.settle(input(tenant, { id: 'a' }).req, 100, 50, 10);
  assert.deepEqual(b.check(input(tenant, { id: 'b', session: 's2' })), PASS);
  const after = b.snapshot();
  assert.deepEqual(after.t1.sessions, {});
  assert.deepEqual(after.t1.commitments, {});
  b.settle(input(tenant, { id: 'a' }).req, 100, 50, 20);
  b.settle(input(tenant, { id: 'nope' }).req, 100, 50, 20);
  assert.deepEqual(b.snapshot(), after);
});

test('a session stays active until its last request settles', () => {
  const tenant = policy({ maxConcurrentSessions: 1 });
  const b = withCommitted(tenant, [
    { id: 'a', session: 's1' },
    { id: 'b', session: 's1' },
  ]);
  b.settle(input(tenant, { id: 'a' }).req, 0, 0, 0);
  assertRejected(b.check(input(tenant, { id: 'c', session: 's2' })), 'tenant_sessions');
  b.settle(input(tenant, { id: 'b' }).req, 0, 0, 0);
  assert.deepEqual(b.check(input(tenant, { id: 'c', session: 's2' })), PASS);
});

test('committing the same request twice charges it once', () => {
  const tenant = policy({ gpuMsPerWindow: 1000, maxConcurrentSessions: 5 });
  const once = withCommitted(tenant, [{ id: 'a' }]).snapshot();
  assert.deepEqual(withCommitted(tenant, [{ id: 'a' }, { id: 'a' }]).snapshot(), once);
});

test('settled actuals replace estimates in the tree', () => {
  const tenant = policy({}, { maxTokens: 900 });
  const b = withCommitted(tenant, [root, child('c1')]); // 400 estimated
  b.settle(input(tenant, child('c1')).req, 500, 0, 5); // 100 + 500 actual
  assert.equal(b.snapshot().t1.trees.r.tokens, 800);
  assert.equal(b.snapshot().t1.trees.r.branches, 1);
  assertRejected(b.check(input(tenant, child('c2', 5))), 'root_budget');
  assert.deepEqual(b.check(input(tenant, { ...child('c2', 5), inputTokens: 0 })), PASS);
});

test('check never mutates, and the snapshot is JSON', () => {
  const tenant = policy(
    {
      tokensPerWindow: 1000,
      gpuMsPerWindow: 500,
      maxConcurrentRequests: 3,
      maxConcurrentSessions: 2,
    },
    { maxBranches: 1, maxTokens: 900, maxWallMs: 5_000 },
  );
  const b = withCommitted(tenant, [
    { ...root, session: 's1' },
    { ...child('c1'), session: 's1' },
  ]);
  const before = b.snapshot();
  assert.deepEqual(JSON.parse(JSON.stringify(before)), before);
  const probes: Probe[] = [
    { id: 'x' },
    { id: 'x', session: 's9', nowMs: 1 },
    { id: 'x', inputTokens: 5_000 },
    child('c2'),
    child('c2', 10 * WINDOW),
    { id: 'r2', rootId: 'r2', nowMs: 10 * WINDOW },
  ];
  for (const p of probes) b.check(input(tenant, p));
  b.check(input(undefined, { id: 'y' }));
  assert.deepEqual(b.snapshot(), before);
});

test('memory stays bounded: finished trees are forgotten a window after their deadline', () => {
  const tenant = policy({}, { maxWallMs: 1_000 });
  const b = new TenantBudgets();
  for (let i = 0; i < 10; i++) b.commit(input(tenant, { id: `r${i}`, rootId: `r${i}` }));
  b.commit(input(tenant, { id: 'busy', rootId: 'busy' }));
  for (let i = 0; i < 10; i++) b.settle(input(tenant, { id: `r${i}` }).req, 0, 0, 0);
  // Within a window of the deadline, a late child is still refused for the wall.
  assertRejected(b.check(input(tenant, { ...child('late', 1_000), rootId: 'r0' })), 'root_budget');
  const later = 1_000 + WINDOW;
  b.commit(input(tenant, { id: 'n', rootId: 'n', nowMs: later }));
  assert.deepEqual(Object.keys(b.snapshot().t1.trees).sort(), ['busy', 'n']);
  // Forgotten: a late child is now an orphan and opens nothing.
  const orphan = { id: 'late', parentId: 'r0', rootId: 'r0', nowMs: later };
  assert.deepEqual(b.check(input(tenant, orphan)), PASS);
  b.commit(input(tenant, orphan));
  assert.deepEqual(Object.keys(b.snapshot().t1.trees).sort(), ['busy', 'n']);
});

test('budget gate: a thin wrapper over TenantBudgets', () => {
  const gate = budgetGate();
  const tenant = policy({ maxConcurrentSessions: 1 });
  assert.equal(gate.type, BUDGET_GATE);
  assert.deepEqual(gate.check(input(tenant, { id: 'a', session: 's1' })), PASS);
  gate.commit(input(tenant, { id: 'a', session: 's1' }));
  assertRejected(gate.check(input(tenant, { id: 'b', session: 's2' })), 'tenant_sessions');
  gate.settle(input(tenant, { id: 'a' }).req, 1, 1, 1);
  assert.deepEqual(gate.budgets.snapshot().t1.sessions, {});
});
