import { test } from 'node:test';
import assert from 'node:assert/strict';
import { REJECT_REASONS, type RejectReason, type RejectStatus } from './admission.ts';
import { checkContract } from './contract-gate.ts';
import { checkMemory, type MemoryGateParams } from './memory-gate.ts';
import {
  assessDeadline,
  checkDeadline,
  type DeadlineGateParams,
  type DeadlineView,
} from './deadline-gate.ts';
import { PASS, type GateInput, type GateVerdict } from './gate.ts';
import { drainRetryAfterMs } from './retry-after.ts';
import { SPEC, TENANT, demand, fleet, gateInput, request } from './admission-test-kit.ts';
import type { Demand } from '../estimate/demand.ts';
import type { LlmRequest } from '../request/request.ts';

interface Refusal {
  readonly reason: RejectReason;
  readonly status: RejectStatus;
  /** Undefined for contract errors, which retrying cannot fix. */
  readonly retryAfterMs?: number;
}

type Want = 'pass' | Refusal;

function assertVerdict(v: GateVerdict, want: Want, name: string): void {
  if (want === 'pass') return assert.deepEqual(v, PASS, name);
  assert.ok(!v.pass, `${name}: expected ${want.reason}, got pass`);
  assert.ok(REJECT_REASONS.includes(v.reason), `${name}: ${v.reason} is not a REJECT_REASON`);
  assert.equal(v.reason, want.reason, name);
  assert.equal(v.status, want.status, name);
  assert.equal(v.retryAfterMs, want.retryAfterMs, name);
}

// --- contract ---------------------------------------------------------------------------------

/** A context window wide enough that the reasoning class's output budget binds first. */
const WIDE = fleet({ spec: { ...SPEC, maxModelLen: 65_536 } });
const ONLY_BATCH = { ...TENANT, classes: ['batch' as const] };
const NO_STREAM = { ...TENANT, streamAllowed: false };

const contractCases: { name: string; input: GateInput; want: Want }[] = [
  { name: 'a plain request', input: gateInput(), want: 'pass' },
  {
    name: 'the fleet model, a known adapter, streamed',
    input: gateInput({ req: request({ model: 'm', adapter: 'a1', stream: true }) }),
    want: 'pass',
  },
  {
    name: 'unknown tenant',
    input: gateInput({ tenant: undefined }),
    want: { reason: 'unknown_tenant', status: 403 },
  },
  {
    name: 'unknown tenant is reported before anything else',
    input: gateInput({ tenant: undefined, req: request({ model: 'other', inputTokens: 9_000 }) }),
    want: { reason: 'unknown_tenant', status: 403 },
  },
  {
    name: 'a class the tenant is not granted',
    input: gateInput({ tenant: ONLY_BATCH }),
    want: { reason: 'class_not_granted', status: 403 },
  },
  {
    name: 'the class the tenant is granted',
    input: gateInput({ tenant: ONLY_BATCH, req: request({ sloClass: 'batch' }) }),
    want: 'pass',
  },
  {
    name: 'unknown model',
    input: gateInput({ req: request({ model: 'other' }) }),
    want: { reason: 'unknown_model', status: 404 },
  },
  {
    name: 'unknown adapter',
    input: gateInput({ req: request({ adapter: 'a2' }) }),
    want: { reason: 'unknown_adapter', status: 404 },
  },
  {
    name: 'streaming where not allowed',
    input: gateInput({ tenant: NO_STREAM, req: request({ stream: true }) }),
    want: { reason: 'stream_not_allowed', status: 403 },
  },
  {
    name: 'not streaming where streaming is not allowed',
    input: gateInput({ tenant: NO_STREAM, req: request({ stream: false }) }),
    want: 'pass',
  },
  {
    name: 'prompt fills the context window (8192)',
    input: gateInput({ req: request({ inputTokens: 8_192 }) }),
    want: { reason: 'context_length', status: 400 },
  },
  {
    name: 'prompt one token short of the window',
    input: gateInput({ req: request({ inputTokens: 8_191 }) }),
    want: 'pass',
  },
  {
    name: 'prompt + max_tokens = 8193',
    input: gateInput({ req: request({ inputTokens: 8_000, maxTokens: 193 }) }),
    want: { reason: 'context_length', status: 400 },
  },
  {
    name: 'prompt + max_tokens = 8192',
    input: gateInput({ req: request({ inputTokens: 8_000, maxTokens: 192 }) }),
    want: 'pass',
  },
  {
    name: 'over the output budget, but the narrow window is reported first',
    input: gateInput({ req: request({ sloClass: 'reasoning', maxTokens: 32_769 }) }),
    want: { reason: 'context_length', status: 400 },
  },
  {
    name: 'reasoning max_tokens 32769 > budget 32768',
    input: gateInput({ req: request({ sloClass: 'reasoning', maxTokens: 32_769 }), fleet: WIDE }),
    want: { reason: 'output_limit', status: 400 },
  },
  {
    name: 'reasoning max_tokens at the budget',
    input: gateInput({ req: request({ sloClass: 'reasoning', maxTokens: 32_768 }), fleet: WIDE }),
    want: 'pass',
  },
  {
    name: 'a class without an output budget',
    input: gateInput({ req: request({ maxTokens: 60_000 }), fleet: WIDE }),
    want: 'pass',
  },
];

for (const c of contractCases) {
  test(`contract: ${c.name}`, () => assertVerdict(checkContract(c.input), c.want, c.name));
}

// --- memory -----------------------------------------------------------------------------------

/** Reserve: 10% of the 100,000-token replica = 10,000 tokens. */
const MEMORY: MemoryGateParams = {
  reserveRatio: 0.1,
  retryAfterMinMs: 1_000,
  retryAfterMaxMs: 30_000,
};

const memoryCases: {
  name: string;
  kvTokens: number;
  maxFreeKvTokens: number;
  waitMs?: number;
  reserveRatio?: number;
  want: Want;
}[] = [
  { name: 'plenty free', kvTokens: 1_400, maxFreeKvTokens: 100_000, want: 'pass' },
  { name: 'exactly free − reserve', kvTokens: 50_000, maxFreeKvTokens: 60_000, want: 'pass' },
  {
    name: 'one token over free − reserve: Retry-After from the drain, rounded up',
    kvTokens: 50_001,
    maxFreeKvTokens: 60_000,
    waitMs: 2_340,
    want: { reason: 'kv_capacity', status: 503, retryAfterMs: 2_400 },
  },
  {
    name: 'fits only an empty replica, nothing queued: the minimum',
    kvTokens: 90_000,
    maxFreeKvTokens: 95_000,
    want: { reason: 'kv_capacity', status: 503, retryAfterMs: 1_000 },
  },
  {
    name: 'fits only an empty replica, long queue: the maximum',
    kvTokens: 90_000,
    maxFreeKvTokens: 0,
    waitMs: 120_000,
    want: { reason: 'kv_capacity', status: 503, retryAfterMs: 30_000 },
  },
  {
    name: 'larger than an empty replica − reserve, though all of it is free',
    kvTokens: 90_001,
    maxFreeKvTokens: 100_000,
    want: { reason: 'context_length', status: 400 },
  },
  {
    name: 'too large is the client’s to fix even when nothing is free',
    kvTokens: 200_000,
    maxFreeKvTokens: 0,
    waitMs: 5_000,
    want: { reason: 'context_length', status: 400 },
  },
  {
    name: 'no reserve: the whole replica',
    kvTokens: 100_000,
    maxFreeKvTokens: 100_000,
    reserveRatio: 0,
    want: 'pass',
  },
];

for (const c of memoryCases) {
  test(`memory: ${c.name}`, () => {
    const input = gateInput({
      demand: demand({ kvTokens: c.kvTokens }),
      fleet: fleet({
        maxFreeKvTokens: c.maxFreeKvTokens,
        wait: { requests: 1, waitMs: c.waitMs ?? 0 },
      }),
    });
    const params = { ...MEMORY, reserveRatio: c.reserveRatio ?? MEMORY.reserveRatio };
    assertVerdict(checkMemory(input, params), c.want, c.name);
  });
}

// --- deadline ---------------------------------------------------------------------------------

/** Margin = 100 ms + 10% of the prediction. */
const DEADLINE: DeadlineGateParams = {
  marginMs: 100,
  marginRatio: 0.1,
  retryAfterMinMs: 1_000,
  retryAfterMaxMs: 30_000,
};

interface DeadlineCase {
  name: string;
  req: Partial<LlmRequest>;
  nowMs?: number;
  waitMs: number;
  demand?: Partial<Demand>;
  decodeStepMs?: number;
  predictedTtftMs: number;
  slackMs: number | null;
  e2eSlackMs: number | null;
  want: Want;
}

// Unless a row says otherwise: arrival 0, now 100, prefill 15 + first decode 10, p90 400 at a
// 10 ms decode step. Predicted TTFT P = W + 25; TTFT slack = deadline − 100 − P − (100 + 0.1 P);
// E2E = P + 400 × 10, with the same margin on it.
const deadlineCases: DeadlineCase[] = [
  {
    name: 'interactive, empty queue: 2000 − 100 − 25 − 102.5',
    req: {},
    waitMs: 0,
    predictedTtftMs: 25,
    slackMs: 1_772.5,
    e2eSlackMs: null,
    want: 'pass',
  },
  {
    name: 'interactive, P = 1000: 2000 − 100 − 1000 − 200',
    req: {},
    waitMs: 975,
    predictedTtftMs: 1_000,
    slackMs: 700,
    e2eSlackMs: null,
    want: 'pass',
  },
  {
    name: 'interactive, P = 1500 split over wait, prefill and first decode',
    req: {},
    waitMs: 500,
    demand: { prefillMs: 600, firstDecodeMs: 400 },
    predictedTtftMs: 1_500,
    slackMs: 150,
    e2eSlackMs: null,
    want: 'pass',
  },
  {
    name: 'interactive, P = 1500 at now 250: slack exactly 0 passes',
    req: {},
    nowMs: 250,
    waitMs: 1_475,
    predictedTtftMs: 1_500,
    slackMs: 0,
    e2eSlackMs: null,
    want: 'pass',
  },
  {
    name: 'interactive, P = 1500 at now 251: slack −1',
    req: {},
    nowMs: 251,
    waitMs: 1_475,
    predictedTtftMs: 1_500,
    slackMs: -1,
    e2eSlackMs: null,
    want: { reason: 'deadline', status: 503, retryAfterMs: 1_500 },
  },
  {
    name: 'interactive, P = 1800: 2000 − 100 − 1800 − 280',
    req: {},
    waitMs: 1_775,
    predictedTtftMs: 1_800,
    slackMs: -180,
    e2eSlackMs: null,
    want: { reason: 'deadline', status: 503, retryAfterMs: 1_800 },
  },
  {
    name: 'interactive, slack counts from arrival, not from 0',
    req: { arrivalMs: 1_000 },
    nowMs: 1_100,
    waitMs: 0,
    predictedTtftMs: 25,
    slackMs: 1_772.5,
    e2eSlackMs: null,
    want: 'pass',
  },
  {
    name: 'batch, empty queue: 3,600,000 − 100 − 4025 − 502.5',
    req: { sloClass: 'batch' },
    waitMs: 0,
    predictedTtftMs: 25,
    slackMs: null,
    e2eSlackMs: 3_595_372.5,
    want: 'pass',
  },
  {
    name: 'batch, 55 min queued: 3,600,000 − 100 − 3,304,025 − 330,502.5',
    req: { sloClass: 'batch' },
    waitMs: 3_300_000,
    predictedTtftMs: 3_300_025,
    slackMs: null,
    e2eSlackMs: -34_627.5,
    want: { reason: 'deadline', status: 503, retryAfterMs: 30_000 },
  },
  {
    name: 'batch, p90 400 at a 9 s decode step: E2E 3,600,025',
    req: { sloClass: 'batch' },
    waitMs: 0,
    decodeStepMs: 9_000,
    predictedTtftMs: 25,
    slackMs: null,
    e2eSlackMs: -360_227.5,
    want: { reason: 'deadline', status: 503, retryAfterMs: 1_000 },
  },
  {
    name: 'reasoning, both objectives met',
    req: { sloClass: 'reasoning' },
    waitMs: 0,
    predictedTtftMs: 25,
    slackMs: 9_772.5,
    e2eSlackMs: 295_372.5,
    want: 'pass',
  },
  {
    name: 'reasoning, p90 30,000 misses E2E: 300,000 − 100 − 300,025 − 30,102.5',
    req: { sloClass: 'reasoning' },
    waitMs: 0,
    demand: { output: { p10: 100, p50: 10_000, p90: 30_000, source: 'class' } },
    predictedTtftMs: 25,
    slackMs: 9_772.5,
    e2eSlackMs: -30_227.5,
    want: { reason: 'deadline', status: 503, retryAfterMs: 1_000 },
  },
  {
    name: 'reasoning, E2E met but first token late: 10,000 − 100 − 10,000 − 1,100',
    req: { sloClass: 'reasoning' },
    waitMs: 9_975,
    predictedTtftMs: 10_000,
    slackMs: -1_200,
    e2eSlackMs: 284_400,
    want: { reason: 'deadline', status: 503, retryAfterMs: 10_000 },
  },
  {
    name: 'best_effort has no objectives: no slack, always passes',
    req: { sloClass: 'best_effort' },
    waitMs: 10_000_000,
    demand: { output: { p10: 1, p50: 50_000, p90: 100_000, source: 'prior' } },
    predictedTtftMs: 10_000_025,
    slackMs: null,
    e2eSlackMs: null,
    want: 'pass',
  },
];

for (const c of deadlineCases) {
  test(`deadline: ${c.name}`, () => {
    const d = demand(c.demand);
    const input = gateInput({
      req: request(c.req),
      demand: d,
      nowMs: c.nowMs ?? 100,
      fleet: fleet({
        decodeStepMs: c.decodeStepMs ?? 10,
        wait: { requests: 1, waitMs: c.waitMs },
      }),
    });
    const view = assessDeadline(input, DEADLINE);
    assert.deepEqual(view, {
      demand: d,
      waitMs: c.waitMs,
      predictedTtftMs: c.predictedTtftMs,
      slackMs: c.slackMs,
      e2eSlackMs: c.e2eSlackMs,
    });
    assertVerdict(checkDeadline(view, DEADLINE), c.want, c.name);
  });
}

test('deadline: the verdict is the sign of each slack present; Retry-After from the wait', () => {
  const rows: [slackMs: number | null, e2eSlackMs: number | null, pass: boolean][] = [
    [null, null, true],
    [0, null, true],
    [-0.5, null, false],
    [null, 0, true],
    [null, -0.5, false],
    [0, 0, true],
    [5, -1, false],
    [-1, 5, false],
  ];
  for (const [slackMs, e2eSlackMs, pass] of rows) {
    const view: DeadlineView = {
      demand: demand(),
      predictedTtftMs: 0,
      waitMs: 12_345,
      slackMs,
      e2eSlackMs,
    };
    const want: Want = pass ? 'pass' : { reason: 'deadline', status: 503, retryAfterMs: 12_400 };
    assertVerdict(checkDeadline(view, DEADLINE), want, `slack ${slackMs}, e2e ${e2eSlackMs}`);
  }
});

// --- Retry-After ------------------------------------------------------------------------------

const retryCases: [drainMs: number, minMs: number, maxMs: number, want: number][] = [
  [0, 1_000, 30_000, 1_000],
  [-500, 1_000, 30_000, 1_000],
  [999, 1_000, 30_000, 1_000],
  [1_000, 1_000, 30_000, 1_000],
  [1_000.5, 1_000, 30_000, 1_100],
  [1_001, 1_000, 30_000, 1_100],
  [12_345, 1_000, 30_000, 12_400],
  [29_901, 1_000, 30_000, 30_000],
  [30_001, 1_000, 30_000, 30_000],
  [1e9, 1_000, 30_000, 30_000],
  [Infinity, 1_000, 30_000, 30_000],
  [0, 0, 30_000, 0],
  [1, 0, 30_000, 100],
  [150, 0, 30_000, 200],
];

for (const [drainMs, minMs, maxMs, want] of retryCases) {
  test(`drainRetryAfterMs(${drainMs}, ${minMs}, ${maxMs}) = ${want}`, () => {
    assert.equal(drainRetryAfterMs(drainMs, minMs, maxMs), want);
  });
}

test('drainRetryAfterMs never shrinks as the drain grows, and never falls short of it', () => {
  for (const [minMs, maxMs] of [
    [1_000, 30_000],
    [0, 5_000],
  ]) {
    let last = -Infinity;
    for (let drainMs = -1_000; drainMs <= 40_000; drainMs += 37.5) {
      const r = drainRetryAfterMs(drainMs, minMs, maxMs);
      const at = `drain ${drainMs}, bounds [${minMs}, ${maxMs}]`;
      assert.ok(r >= last, `${at}: ${r} < ${last}`);
      assert.ok(r >= minMs && r <= maxMs, `${at}: ${r} out of bounds`);
      assert.equal(r % 100, 0, `${at}: ${r} not a multiple of 100`);
      assert.ok(r >= Math.min(drainMs, maxMs), `${at}: ${r} before the queue drains`);
      last = r;
    }
    assert.equal(last, maxMs);
  }
});

test('deadline: a refusal says to come back when the queue has drained to within the queue budget', () => {
  const params = { marginMs: 0, marginRatio: 0, retryAfterMinMs: 500, retryAfterMaxMs: 60_000 };
  const view = {
    demand: demand(),
    slackMs: -1_000,
    predictedTtftMs: 3_000,
    waitMs: 2_975,
    e2eSlackMs: null,
  };
  const rows: Array<[budget: number | null, retryAfterMs: number]> = [
    [null, 3_000], // no budget known yet: the whole queue must drain
    [1_700, 1_300], // 2,975 − 1,700 = 1,275 → 1,300
    [2_900, 500], // nearly within budget: the floor
  ];
  for (const [budget, retryAfterMs] of rows) {
    assert.deepEqual(checkDeadline(view, params, budget), {
      pass: false,
      reason: 'deadline',
      status: 503,
      retryAfterMs,
    });
  }
});
