import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolvePolicy } from './policy.ts';
import { PRESETS, presetPolicy } from './presets.ts';
import { isConfigError } from '../errors.ts';
import { lookupTenant, refuseUnservedModels } from './tenant-schema.ts';
import { modelsOf } from '../admission/contract-gate.ts';
import { DEFAULT_GAP_FEEDBACK } from '../routing/gap-feedback.ts';

const valid = {
  name: 'p',
  policy_revision: 'r1',
  admission: { type: 'admit-all' },
  routing: { type: 'least-request' },
};

test('every preset validates', () => {
  for (const name of Object.keys(PRESETS)) assert.equal(presetPolicy(name).name, name);
});

test("tenants: a tenant's models are those it sees; one no backend serves is named", () => {
  const served = ['base', 'sql-lora', 'chat-lora'];
  const p = resolvePolicy({
    ...valid,
    tenants: { acme: { models: ['chat-lora', 'base'] }, open: {}, '*': { models: ['base'] } },
  });
  const t = (name: string) => lookupTenant(p.tenants, name);
  assert.deepEqual(modelsOf(t('acme'), served), ['base', 'chat-lora'], 'in the order served');
  assert.equal(modelsOf(t('open'), served), served, 'no list: every one');
  assert.deepEqual(modelsOf(t('anyone'), served), ['base']);
  refuseUnservedModels(p.tenants, served);
  assert.throws(() => refuseUnservedModels(p.tenants, ['base', 'sql-lora']), {
    message: 'tenants.acme.models[0]: expected a served model (base, sql-lora), got "chat-lora"',
  });
  assert.throws(() => refuseUnservedModels(p.tenants, ['other', 'chat-lora'], 'p.yaml'), {
    message:
      'p.yaml: tenants.acme.models[1]: expected a served model (other, chat-lora), got "base"',
  });
  const star = resolvePolicy({ ...valid, tenants: { '*': { models: ['gone'] } } });
  assert.throws(() => refuseUnservedModels(star.tenants, served), {
    message: /^tenants\.\*\.models\[0\]: .*got "gone"$/,
  });
});

test('tenants: listed ones are known, others only through "*"', () => {
  const closed = resolvePolicy({ ...valid, tenants: { acme: { weight: 2, classes: ['batch'] } } });
  assert.equal(lookupTenant(closed.tenants, 'acme')?.weight, 2);
  assert.deepEqual(lookupTenant(closed.tenants, 'acme')?.classes, ['batch']);
  assert.equal(lookupTenant(closed.tenants, 'other'), undefined);
  const open = resolvePolicy({
    ...valid,
    tenants: { '*': { quotas: { max_concurrent_requests: 4 } } },
  });
  assert.equal(lookupTenant(open.tenants, 'other')?.quotas.maxConcurrentRequests, 4);
  assert.ok(lookupTenant(resolvePolicy(valid).tenants, 'anyone') !== undefined);
});

test("a policy that names no dispatch: flow control under Goodput's admission, immediate under admit-all", () => {
  const base = { name: 'p', policy_revision: 'p@1', routing: { type: 'least-request' } };
  const goodput = resolvePolicy({ ...base, admission: { type: 'goodput' } });
  assert.equal(goodput.dispatch.type, 'flow-control');
  const baseline = resolvePolicy({ ...base, admission: { type: 'admit-all' } });
  assert.equal(baseline.dispatch.type, 'immediate');
  const asked = resolvePolicy({
    ...base,
    admission: { type: 'goodput' },
    dispatch: { type: 'immediate' },
  });
  assert.equal(asked.dispatch.type, 'immediate');
});

test('gate parameters and ladders resolve with their defaults', () => {
  const p = resolvePolicy({
    ...valid,
    admission: {
      type: 'goodput',
      gates: [{ type: 'contract' }, { type: 'deadline', params: { margin_ms: 50 } }],
    },
    classes: {
      batch: {
        degrade: [
          { level: 1, min_output_tokens: 32 },
          { level: 4, mode: 'reject' },
        ],
      },
    },
  });
  assert.ok(p.admission.type === 'goodput');
  assert.deepEqual(p.admission.gates, ['contract', 'deadline']);
  assert.equal(p.admission.marginMs, 50);
  assert.equal(p.admission.marginRatio, 0);
  assert.deepEqual(p.classes.batch.degrade, [
    { level: 1, minOutputTokens: 32 },
    { level: 4, mode: 'reject' },
  ]);
});

test("a class's output prior takes the estimate's own for what it does not name", () => {
  const p = resolvePolicy({
    ...valid,
    estimate: {
      prior_output_reserve: 2_048,
      by_class: { reasoning: { prior_output_p50: 1_024, prior_output_p90: 8_192 } },
    },
  });
  assert.deepEqual(p.estimate.classPriors, {
    reasoning: { p50: 1_024, p90: 8_192, reserve: 2_048 },
  });
  assert.deepEqual(p.estimate.priorOutput, { p50: 128, p90: 512 });
});

test('class overrides replace only what they name', () => {
  const p = resolvePolicy({ ...valid, classes: { interactive: { ttft_ms: 500 } } });
  assert.equal(p.classes.interactive.objectives.ttftMs, 500);
  assert.equal(p.classes.interactive.objectives.itlP99Ms, 80);
  assert.equal(p.classes.batch.objectives.e2eMs, 3_600_000);
});

const invalid: Array<[string, unknown, string]> = [
  [
    'unknown admission type',
    { ...valid, admission: { type: 'smart' } },
    'admission.type: expected one of admit-all, goodput, got "smart"',
  ],
  [
    'negative gate margin',
    {
      ...valid,
      admission: { type: 'goodput', gates: [{ type: 'deadline', params: { margin_ms: -5 } }] },
    },
    'admission.gates[0].params.margin_ms: expected a number ≥ 0, got -5',
  ],
  [
    'unknown gate',
    { ...valid, admission: { type: 'goodput', gates: [{ type: 'vibes' }] } },
    'admission.gates[0].type: expected one of contract, budget, memory, deadline, got "vibes"',
  ],
  [
    'reserve ratio above 1',
    {
      ...valid,
      admission: { type: 'goodput', gates: [{ type: 'memory', params: { reserve_ratio: 1.5 } }] },
    },
    'admission.gates[0].params.reserve_ratio: expected a number ≤ 1, got 1.5',
  ],
  [
    'degrade ladder out of order',
    {
      ...valid,
      classes: {
        batch: {
          degrade: [
            { level: 4, mode: 'defer' },
            { level: 1, min_output_tokens: 8 },
          ],
        },
      },
    },
    'classes.batch.degrade: expected levels in ascending order, each at most once, got [{"level":4,"mode":"defer"},{"level":1,"min_output_tokens":8}]',
  ],
  [
    'unknown degrade level',
    { ...valid, classes: { batch: { degrade: [{ level: 7 }] } } },
    'classes.batch.degrade[0].level: expected one of 1, 2, 3, 4, got 7',
  ],
  [
    'unknown overload behaviour',
    { ...valid, classes: { interactive: { overload: 'panic' } } },
    'classes.interactive.overload: expected one of reject-fast, queue, defer, leftover-only, got "panic"',
  ],
  [
    'tenant granted an unknown class',
    { ...valid, tenants: { acme: { classes: ['vip'] } } },
    'tenants.acme.classes[0]: expected one of interactive, reasoning, batch, best_effort, got "vip"',
  ],
  [
    'negative tenant quota',
    { ...valid, tenants: { acme: { quotas: { tokens_per_window: -1 } } } },
    'tenants.acme.quotas.tokens_per_window: expected a number > 0, got -1',
  ],
  [
    'fractional concurrency',
    { ...valid, tenants: { acme: { quotas: { max_concurrent_requests: 1.5 } } } },
    'tenants.acme.quotas.max_concurrent_requests: expected an integer, got 1.5',
  ],
  [
    'unknown dispatch type',
    { ...valid, dispatch: { type: 'yolo' } },
    'dispatch.type: expected one of immediate, flow-control, got "yolo"',
  ],
  [
    'negative pace tolerance',
    { ...valid, dispatch: { type: 'flow-control', params: { pace: { tolerance: -0.1 } } } },
    'dispatch.params.pace.tolerance: expected a number ≥ 0, got -0.1',
  ],
  [
    'a gap feedback backoff above 1',
    { ...valid, dispatch: { type: 'flow-control', params: { gap_feedback: { backoff: 2 } } } },
    'dispatch.params.gap_feedback.backoff: expected a number ≤ 1, got 2',
  ],
  [
    'staged prefill not a boolean',
    { ...valid, dispatch: { type: 'flow-control', params: { staged_prefill: 'yes' } } },
    'dispatch.params.staged_prefill: expected a boolean, got "yes"',
  ],
  [
    'unknown router',
    { ...valid, routing: { type: 'fastest' } },
    'routing.type: expected one of round-robin, least-request, least-kv, llm-d-like, sglang-cache-aware, session-hash, expected-completion, got "fastest"',
  ],
  [
    'negative objective',
    { ...valid, classes: { batch: { e2e_ms: -5 } } },
    'classes.batch.e2e_ms: expected a number > 0, got -5',
  ],
  [
    'an objective of 0 ms, which refuses every request',
    { ...valid, classes: { interactive: { ttft_ms: 0 } } },
    'classes.interactive.ttft_ms: expected a number > 0, got 0',
  ],
  [
    'unknown class',
    { ...valid, classes: { vip: { ttft_ms: 1 } } },
    'classes: expected a key among interactive, reasoning, batch, best_effort, got "vip"',
  ],
  [
    'a value that is neither form an either-or setting takes',
    { ...valid, dispatch: { type: 'flow-control', params: { pace: 5 } } },
    'dispatch.params.pace: expected false or an object, got 5',
  ],
  [
    'missing revision',
    { ...valid, policy_revision: undefined },
    'policy_revision: expected a string, got nothing',
  ],
  [
    'unknown key, named alone',
    { ...valid, speed: 'max' },
    '(root): expected a key among name, policy_revision, description, admission, dispatch, queueing, routing, estimate, classes, tenants, resilience, slos, service_tiers, engine, got "speed"',
  ],
  [
    'unknown keys',
    { ...valid, speed: 'max', admision: {} },
    '(root): expected keys among name, policy_revision, ',
  ],
  [
    "an unknown key in a stage, among the keys of the stage's type",
    { ...valid, admission: { type: 'goodput', gate: [] } },
    'admission: expected a key among type, gates, retry_after, got "gate"',
  ],
  [
    "an unknown key in a gate's params",
    {
      ...valid,
      admission: {
        type: 'goodput',
        gates: [{ type: 'budget' }, { type: 'memory', params: { reserve: 1 } }],
      },
    },
    'admission.gates[1].params: expected a key among reserve_ratio, got "reserve"',
  ],
  [
    'an unknown key in a tenant',
    { ...valid, tenants: { acme: { wieght: 2 } } },
    'tenants.acme: expected a key among weight, classes, models, ',
  ],
  ['an object that is not', { ...valid, admission: 5 }, 'admission: expected an object, got 5'],
  [
    'an array that is not',
    { ...valid, admission: { type: 'goodput', gates: 'all' } },
    'admission.gates: expected an array, got "all"',
  ],
  [
    'a fraction where an integer goes',
    { ...valid, estimate: { output_window: 1.5 } },
    'estimate.output_window: expected an integer, got 1.5',
  ],
  [
    'minimum shares over 1',
    { ...valid, classes: { batch: { min_share: 0.6 }, reasoning: { min_share: 0.5 } } },
    'classes: expected min_share summed over the classes ≤ 1',
  ],
  [
    'a minimum share over the maximum',
    { ...valid, classes: { batch: { min_share: 0.6, max_share: 0.5 } } },
    'classes.batch: expected min_share ≤ max_share',
  ],
  [
    'a flow-control margin that leaves steps nothing of a gap',
    { ...valid, dispatch: { type: 'flow-control', params: { itl_margin_ratio: 0.9 } } },
    'dispatch.params.itl_margin_ratio: expected a value that leaves engine steps part of every gap objective: dispatch.params.itl_margin_ratio + resilience.shed_gap_ratio < 1, got 0.9',
  ],
  [
    'a relay share that leaves steps nothing of a gap',
    { ...valid, dispatch: { type: 'flow-control' }, resilience: { shed_gap_ratio: 0.95 } },
    'resilience.shed_gap_ratio: expected a value that leaves engine steps part of every gap objective',
  ],
  [
    'a KV reserve of no tokens',
    { ...valid, estimate: { prior_output_reserve: 0 } },
    'estimate.prior_output_reserve: expected a number ≥ 1, got 0',
  ],
  [
    "a class's prior p50 past the p90 it inherits",
    { ...valid, estimate: { by_class: { reasoning: { prior_output_p50: 2_000 } } } },
    "estimate.by_class.reasoning: expected prior_output_p50 ≤ prior_output_p90 (the estimate's own where the class sets none)",
  ],
  [
    'a prior for an unknown class',
    { ...valid, estimate: { by_class: { vip: { prior_output_p50: 10 } } } },
    'estimate.by_class: expected a key among interactive, reasoning, batch, best_effort, got "vip"',
  ],
  [
    'an unknown queue order',
    { ...valid, queueing: { order: 'lifo' } },
    'queueing.order: expected one of vtc, scored, fifo, got "lifo"',
  ],
];

for (const [name, input, message] of invalid) {
  test(`rejects ${name} naming path and value`, () => {
    assert.throws(
      () => resolvePolicy(input),
      (e: unknown) => isConfigError(e) && e.message.startsWith(message),
    );
  });
}

test("flow control's gap budget leaves the relay's share free: 0.75 of the objective by default", () => {
  const p = resolvePolicy({ ...valid, dispatch: { type: 'flow-control' } });
  assert.ok(p.dispatch.type === 'flow-control');
  assert.equal(p.dispatch.itlMarginRatio, 0.1);
  assert.equal(p.dispatch.relayGapRatio, 0.15);
  assert.doesNotThrow(
    () => resolvePolicy({ ...valid, resilience: { shed_gap_ratio: 1 } }),
    'dispatched at once, steps are not held to a gap budget',
  );
  const none = resolvePolicy({
    ...valid,
    dispatch: { type: 'flow-control' },
    resilience: { shed_gap_ratio: 0 },
  });
  assert.ok(none.dispatch.type === 'flow-control');
  assert.equal(none.dispatch.relayGapRatio, 0, 'no guard on the relay: nothing kept for it');
});

test('flow control stages long prompts unless the policy says not to', () => {
  const on = resolvePolicy({ ...valid, dispatch: { type: 'flow-control' } });
  assert.ok(on.dispatch.type === 'flow-control' && on.dispatch.stagedPrefill);
  const off = resolvePolicy({
    ...valid,
    dispatch: { type: 'flow-control', params: { staged_prefill: false } },
  });
  assert.ok(off.dispatch.type === 'flow-control' && !off.dispatch.stagedPrefill);
});

test('unknown preset names the choices', () => {
  assert.throws(
    () => presetPolicy('fast'),
    / policy: expected a preset \(baseline-vllm, least-request, goodput\), got "fast"$/,
  );
});

test('gap feedback: on by default under flow control, off with false, each field overridable', () => {
  const feedback = (params?: Record<string, unknown>) => {
    const d = resolvePolicy({ ...valid, dispatch: { type: 'flow-control', params } }).dispatch;
    return d.type === 'flow-control' ? d.gapFeedback : 'immediate';
  };
  assert.deepEqual(feedback(), DEFAULT_GAP_FEEDBACK);
  assert.equal(feedback({ gap_feedback: false }), null);
  assert.deepEqual(feedback({ gap_feedback: { late_ratio: 0.9, hold_ms: 250 } }), {
    ...DEFAULT_GAP_FEEDBACK,
    lateRatio: 0.9,
    holdMs: 250,
  });
});

test('a key named __proto__ is refused wherever it is, not passed over', () => {
  // As a YAML or JSON document holds it: an own key, not the object's prototype.
  const classes = JSON.parse('{"__proto__": {"ttft_ms": 1000}, "interactive": {"ttft_ms": 2000}}');
  assert.throws(
    () => resolvePolicy({ ...valid, classes }),
    (e) => isConfigError(e) && e.path === 'classes' && /__proto__/.test(e.message),
  );
  const tenants = JSON.parse('{"acme": {"__proto__": {"weight": 2}}}');
  assert.throws(
    () => resolvePolicy({ ...valid, tenants }),
    (e) => isConfigError(e) && e.path === 'tenants.acme',
  );
});
