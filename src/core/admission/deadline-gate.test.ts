// Tests for assessDeadline and checkDeadline (deadline-gate.ts): TTFT and E2E slack, Retry-After.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  assessDeadline,
  checkDeadline,
  checkLeastWait,
  type DeadlineGateParams,
  type DeadlineView,
} from './deadline-gate.ts';
import {
  demand,
  fleet,
  gateInput,
  request,
  expectedVerdict,
  type WantVerdict,
} from './admission-test-kit.ts';
import type { Demand } from '../request/demand.ts';
import { DEFAULT_SLO_CLASSES } from '../request/slo-classes.ts';
import type { LlmRequest } from '../request/request.ts';

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
  want: WantVerdict;
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
    name: 'disaggregated, P = 1500 with a 475 ms hand-over (prefill pool queue, KV transfer)',
    req: {},
    waitMs: 500,
    demand: { prefillMs: 15, handoverMs: 475, firstDecodeMs: 10 },
    predictedTtftMs: 1_000,
    slackMs: 700,
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
      modelledWaitMs: c.waitMs,
      queueTargetMs: null,
      predictedTtftMs: c.predictedTtftMs,
      slackMs: c.slackMs,
      e2eSlackMs: c.e2eSlackMs,
      yieldWaitMs: null,
      byClient: false,
    });
    assert.deepEqual(checkDeadline(view, DEADLINE), expectedVerdict(c.want), c.name);
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
      modelledWaitMs: 12_345,
      queueTargetMs: null,
      slackMs,
      e2eSlackMs,
      yieldWaitMs: null,
      byClient: false,
    };
    const want: WantVerdict = pass
      ? 'pass'
      : { reason: 'deadline', status: 503, retryAfterMs: 12_400 };
    assert.deepEqual(
      checkDeadline(view, DEADLINE),
      expectedVerdict(want),
      `slack ${slackMs}, e2e ${e2eSlackMs}`,
    );
  }
});

test('deadline: a refusal says to come back when the queue has drained to within the queue budget', () => {
  const params = { marginMs: 0, marginRatio: 0, retryAfterMinMs: 500, retryAfterMaxMs: 60_000 };
  const view = {
    demand: demand(),
    slackMs: -1_000,
    predictedTtftMs: 3_000,
    waitMs: 2_975,
    modelledWaitMs: 2_975,
    queueTargetMs: null,
    e2eSlackMs: null,
    yieldWaitMs: null,
    byClient: false,
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

test('a client deadline sooner than the class objective binds, judged at the p50 output', () => {
  const p: DeadlineGateParams = {
    marginMs: 0,
    marginRatio: 0,
    retryAfterMinMs: 500,
    retryAfterMaxMs: 60_000,
  };
  // Interactive (no E2E objective): wait 0, prefill 15, first decode 10, p50 100 × 10 ms steps.
  const at = (deadlineMs: number | undefined) =>
    assessDeadline(
      gateInput({ req: request({ deadlineMs }), fleet: fleet({ decodeStepMs: 10 }) }),
      p,
    ).e2eSlackMs;
  assert.equal(at(undefined), null);
  assert.equal(at(2_000), 2_000 - (25 + 100 * 10));
  assert.ok((at(900) ?? 0) < 0);
  assert.equal(
    checkDeadline(assessDeadline(gateInput({ req: request({ deadlineMs: 900 }) }), p), p).pass,
    false,
  );
});

test('deadline: slack is judged at the sure wait, the prediction stays the likely one', () => {
  const input = gateInput({
    req: request(),
    demand: demand(),
    nowMs: 100,
    fleet: fleet({ wait: { requests: 3, waitMs: 500, modelledWaitMs: 400, sureWaitMs: 1_500 } }),
  });
  const view = assessDeadline(input, DEADLINE);
  assert.equal(view.predictedTtftMs, 525, 'likely wait 500 + prefill 15 + first decode 10');
  assert.equal(view.modelledWaitMs, 400);
  // 2,000 − 100 − 1,525 − (100 + 152.5): the sure TTFT and its margin.
  assert.equal(view.slackMs, 122.5);
  assert.deepEqual(checkDeadline(view, DEADLINE), { pass: true });
  const surer = assessDeadline(
    { ...input, fleet: fleet({ wait: { requests: 3, waitMs: 500, sureWaitMs: 1_700 } }) },
    DEADLINE,
  );
  assert.equal(surer.slackMs, -97.5);
  assert.equal(checkDeadline(surer, DEADLINE).pass, false);
});

test('deadline: under queue-delay control a wait over the target is refused, with slack to spare', () => {
  const params = { ...DEADLINE, retryAfterMinMs: 0 };
  const seen: [string, number][] = [];
  const control = (cls: string, waitMs: number) => {
    seen.push([cls, waitMs]);
    return 400;
  };
  const at = (waitMs: number) =>
    assessDeadline(
      gateInput({
        req: request(),
        demand: demand(),
        fleet: fleet({ wait: { requests: 3, waitMs }, queueTargetMs: control }),
      }),
      params,
    );
  const within = at(400);
  assert.equal(within.queueTargetMs, 400);
  assert.deepEqual(checkDeadline(within, params, 1_500), { pass: true });
  const over = at(900);
  assert.ok((over.slackMs ?? 0) > 0, 'the deadline alone would admit it');
  // Come back when the queue has drained to within the target: 900 − 400.
  assert.deepEqual(checkDeadline(over, params, 1_500), {
    pass: false,
    reason: 'deadline',
    status: 503,
    retryAfterMs: 500,
  });
  assert.deepEqual(seen, [
    ['interactive', 400],
    ['interactive', 900],
  ]);
});

test('deadline: a long prompt shows the control no wait of the queue’s', () => {
  const seen: number[] = [];
  assessDeadline(
    gateInput({
      req: request(),
      demand: demand(),
      fleet: fleet({
        wait: { requests: 0, waitMs: 1_200, long: true },
        queueTargetMs: (_cls, waitMs) => (seen.push(waitMs), null),
      }),
    }),
    DEADLINE,
  );
  assert.deepEqual(seen, [0]);
});

test('deadline: the queue-delay target yields to priority while lower work waits, within the budget (a queueing class)', () => {
  const view = (waitMs: number, lowerWaiting: boolean, budget = 9_800): DeadlineView => ({
    demand: demand(),
    slackMs: 5_000,
    predictedTtftMs: waitMs + 20,
    waitMs,
    modelledWaitMs: waitMs,
    queueTargetMs: 1_500,
    e2eSlackMs: null,
    yieldWaitMs: lowerWaiting ? budget : null,
    byClient: false,
  });
  const budget = 9_800;
  // Over the target with nothing below it waiting: refused, as under sustained overload.
  assert.equal(checkDeadline(view(2_000, false), DEADLINE, budget).pass, false);
  // Lower-priority work waits: the capacity it would take is this class's first.
  assert.equal(checkDeadline(view(2_000, true), DEADLINE, budget).pass, true);
  // Up to the queue budget, the slack alone decides; past the budget, the target holds.
  assert.equal(checkDeadline(view(5_000, true), DEADLINE, budget).pass, true);
  assert.equal(checkDeadline(view(9_900, true), DEADLINE, budget).pass, false);
  // Within the budget but with no slack left (the sure wait misses the deadline): refused.
  const late = { ...view(5_000, true), slackMs: -1 };
  assert.equal(checkDeadline(late, DEADLINE, budget).pass, false);
});

test('deadline: only a class that queues under overload has the target yield, up to its budget or TTFT', () => {
  const assess = (cls: 'reasoning' | 'interactive', budgetMs: number | null) =>
    assessDeadline(
      gateInput({
        req: request({ sloClass: cls }),
        fleet: fleet({ lowerWaiting: () => true, queueBudgetMs: () => budgetMs }),
      }),
      DEADLINE,
    ).yieldWaitMs;
  assert.equal(assess('reasoning', 9_000), 9_000);
  assert.equal(assess('reasoning', null), 10_000, 'its 10 s TTFT before a budget is learned');
  assert.equal(assess('interactive', 1_800), null, 'reject-fast keeps the target');
});

test('checkLeastWait: refuses only a floor past a target in force, unless the class would yield at it', () => {
  const cls = DEFAULT_SLO_CLASSES.interactive;
  const reasoning = DEFAULT_SLO_CLASSES.reasoning;
  const inForce = fleet({ queueTargetMs: () => 300, queueBudgetMs: () => 1_500 });
  assert.equal(checkLeastWait(fleet(), cls, 5_000, DEADLINE), undefined, 'no target in force');
  assert.equal(checkLeastWait(inForce, cls, 300, DEADLINE), undefined, 'at the target');
  assert.equal(checkLeastWait(inForce, cls, 0, DEADLINE), undefined, 'no floor');
  assert.deepEqual(checkLeastWait(inForce, cls, 2_300, DEADLINE), {
    outcome: 'reject',
    reason: 'deadline',
    status: 503,
    // The queue must drain the floor's 2,000 ms past the target.
    retryAfterMs: 2_000,
    queue: { leastWaitMs: 2_300, targetMs: 300 },
  });
  // A class that queues under overload yields to lower work waiting, up to its queue budget.
  const lowerWaits = fleet({ ...inForce, lowerWaiting: () => true });
  assert.equal(reasoning.overload, 'queue');
  assert.equal(checkLeastWait(lowerWaits, reasoning, 1_500, DEADLINE), undefined);
  assert.equal(checkLeastWait(lowerWaits, reasoning, 1_501, DEADLINE)?.reason, 'deadline');
  assert.equal(checkLeastWait(lowerWaits, cls, 1_000, DEADLINE)?.reason, 'deadline');
});

test("deadline: its client's own deadline missed with nothing ahead is final; a wait or a class's objective is not", () => {
  const view = (waitMs: number, byClient: boolean): DeadlineView => ({
    demand: demand(),
    slackMs: 500,
    predictedTtftMs: waitMs + 100,
    waitMs,
    modelledWaitMs: waitMs,
    queueTargetMs: null,
    e2eSlackMs: -20_000,
    yieldWaitMs: null,
    byClient,
  });
  const params = { ...DEADLINE, retryAfterMinMs: 500, retryAfterMaxMs: 30_000 };
  assert.deepEqual(checkDeadline(view(0, true), params), {
    pass: false,
    reason: 'deadline',
    status: 503,
    final: true,
  });
  const waiting = checkDeadline(view(2_000, true), params);
  assert.ok(!waiting.pass && waiting.final === undefined && waiting.retryAfterMs === 2_000);
  const classBound = checkDeadline(view(0, false), params);
  assert.ok(!classBound.pass && classBound.final === undefined && classBound.retryAfterMs === 500);
});
