import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OutputLengthModel, SNAPSHOT_TENANTS } from './output-length-model.ts';

const prior = { p50: 200, p90: 800 };

test('falls back tenant → class → prior exactly at the minSamples boundary', () => {
  const m = new OutputLengthModel({ window: 16, minSamples: 4, prior });
  assert.deepEqual(m.predict('interactive', 'a'), { p10: 1, p50: 200, p90: 800, source: 'prior' });

  // Three samples from tenant b: neither window is trusted yet.
  for (const v of [10, 10, 10]) m.observe('interactive', 'b', v);
  assert.equal(m.predict('interactive', 'a').source, 'prior');
  assert.equal(m.predict('interactive', 'b').source, 'prior');

  // The fourth makes the class window trusted; b's own window too.
  m.observe('interactive', 'a', 50);
  assert.deepEqual(m.predict('interactive', 'a'), {
    p10: 10,
    p50: 10,
    p90: 38,
    source: 'class',
  });
  assert.equal(m.predict('interactive', 'c').source, 'class');
  assert.equal(m.predict('interactive', 'b').source, 'class');
  m.observe('interactive', 'b', 10);
  assert.deepEqual(m.predict('interactive', 'b'), {
    p10: 10,
    p50: 10,
    p90: 10,
    source: 'tenant',
  });

  // Another class has learnt nothing.
  assert.equal(m.predict('batch', 'b').source, 'prior');
  for (const v of [100, 100, 100]) m.observe('interactive', 'a', v);
  // [50, 100, 100, 100]: p10 = 50 + 0.3 × 50 = 65.
  assert.deepEqual(m.predict('interactive', 'a'), {
    p10: 65,
    p50: 100,
    p90: 100,
    source: 'tenant',
  });
});

test('rounds up to whole tokens ≥ 1 and keeps p10 ≤ p50 ≤ p90', () => {
  const m = new OutputLengthModel({ window: 8, minSamples: 2, prior });
  m.observe('batch', 't', 0);
  m.observe('batch', 't', 0);
  assert.deepEqual(m.predict('batch', 't'), { p10: 1, p50: 1, p90: 1, source: 'tenant' });
  m.observe('batch', 'u', 3);
  m.observe('batch', 'u', 4);
  // numpy linear over [3, 4]: p10 = 3.1 → 4, p50 = 3.5 → 4, p90 = 3.9 → 4.
  assert.deepEqual(m.predict('batch', 'u'), { p10: 4, p50: 4, p90: 4, source: 'tenant' });
  for (let i = 1; i <= 8; i++) m.observe('reasoning', 'x', i * 37);
  const p = m.predict('reasoning', 'x');
  assert.ok([p.p10, p.p50, p.p90].every(Number.isInteger));
  assert.ok(p.p10 <= p.p50 && p.p50 <= p.p90);
});

test('caps every percentile by the request budget', () => {
  const m = new OutputLengthModel({ window: 8, minSamples: 2, prior });
  const prior500 = { p10: 1, p50: 200, p90: 500, source: 'prior' };
  assert.deepEqual(m.predict('reasoning', 'a', 500), prior500);
  const prior100 = { p10: 1, p50: 100, p90: 100, source: 'prior' };
  assert.deepEqual(m.predict('reasoning', 'a', 100), prior100);
  m.observe('reasoning', 'a', 1000);
  m.observe('reasoning', 'a', 3000);
  // [1000, 3000]: p10 = 1200, p50 = 2000, p90 = 2800.
  const capped = { p10: 1200, p50: 2000, p90: 2500, source: 'tenant' };
  assert.deepEqual(m.predict('reasoning', 'a', 2500), capped);
  const uncapped = { p10: 1200, p50: 2000, p90: 2800, source: 'tenant' };
  assert.deepEqual(m.predict('reasoning', 'a'), uncapped);
  const below = { p10: 1000, p50: 1000, p90: 1000, source: 'tenant' };
  assert.deepEqual(m.predict('reasoning', 'a', 1000), below);
});

test("p10 is the window's 10th percentile, and p10 ≤ p50 ≤ p90", () => {
  const spread = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110];
  const cases: {
    name: string;
    values: number[];
    cap?: number;
    p10: number;
    p50: number;
    p90: number;
  }[] = [
    // 11 values: ranks 1, 5 and 9 fall on samples exactly.
    { name: 'evenly spread', values: spread, p10: 20, p50: 60, p90: 100 },
    // Rank 0.1 between 5 and 7: 5.2 rounds up to 6.
    { name: 'interpolated', values: [7, 5], p10: 6, p50: 6, p90: 7 },
    // Rank 0.9 of ten values is still the shortest answer, 0, which the floor of 1 lifts.
    { name: 'mostly empty', values: [0, 0, 0, 0, 0, 0, 0, 0, 0, 100], p10: 1, p50: 1, p90: 10 },
    { name: 'cap between p10 and p50', values: spread, cap: 50, p10: 20, p50: 50, p90: 50 },
    { name: 'cap below p10', values: spread, cap: 15, p10: 15, p50: 15, p90: 15 },
  ];
  for (const c of cases) {
    const m = new OutputLengthModel({ window: 16, minSamples: 2, prior });
    for (const v of c.values) m.observe('interactive', 'a', v);
    const p = m.predict('interactive', 'a', c.cap);
    assert.deepEqual(p, { p10: c.p10, p50: c.p50, p90: c.p90, source: 'tenant' }, c.name);
    assert.ok(p.p10 <= p.p50 && p.p50 <= p.p90, c.name);
  }
});

test('forgets outputs older than the window', () => {
  const m = new OutputLengthModel({ window: 4, minSamples: 4, prior });
  for (const v of [1000, 1000, 1000, 1000]) m.observe('interactive', 'a', v);
  for (const v of [20, 20, 20, 20]) m.observe('interactive', 'a', v);
  assert.deepEqual(m.predict('interactive', 'a'), { p10: 20, p50: 20, p90: 20, source: 'tenant' });
});

test('rejects invalid options and observations', () => {
  assert.throws(() => new OutputLengthModel({ window: 0, prior }), RangeError);
  assert.throws(() => new OutputLengthModel({ window: 10, minSamples: 11, prior }), RangeError);
  assert.throws(() => new OutputLengthModel({ prior: { p50: 100, p90: 50 } }), RangeError);
  assert.throws(() => new OutputLengthModel({ prior: { p50: 0, p90: 50 } }), RangeError);
  const m = new OutputLengthModel({ prior });
  assert.throws(() => m.observe('batch', 'a', -1), RangeError);
  assert.throws(() => m.observe('batch', 'a', NaN), RangeError);
});

test('outputs cut at their max_tokens teach the cap, not nothing', () => {
  const m = new OutputLengthModel({ window: 16, minSamples: 4, prior });
  // Every request runs to its cap of 256: before, none of them was learned and the prior's
  // p50 of 200 stood, so the requests running were predicted to end early.
  for (let i = 0; i < 4; i++) m.observe('interactive', 'a', 256, true);
  assert.deepEqual(m.predict('interactive', 'a', 256), {
    p10: 256,
    p50: 256,
    p90: 256,
    source: 'tenant',
  });
  // A tenant whose requests end on their own at 40 keeps its 40, whatever the cut ones say.
  for (let i = 0; i < 4; i++) m.observe('interactive', 'b', 40);
  for (let i = 0; i < 4; i++) m.observe('interactive', 'b', 16, true);
  assert.equal(m.predict('interactive', 'b').p50, 40);
});

test('while most of what was dispatched still runs, a learned p50 or p90 is no lower than the prior', () => {
  const m = new OutputLengthModel({ window: 16, minSamples: 4, prior });
  // A cold start: ten requests dispatched; the four shortest end first.
  for (let i = 0; i < 10; i++) m.started('interactive', 'a');
  for (const v of [5, 8, 10, 12]) m.observe('interactive', 'a', v);
  assert.deepEqual(m.predict('interactive', 'a'), {
    p10: 6,
    p50: 200,
    p90: 800,
    source: 'tenant',
  });
  // A fifth ends: half of the ten have, and what ended is taken as it is.
  m.observe('interactive', 'a', 300);
  assert.deepEqual(m.predict('interactive', 'a'), {
    p10: 7,
    p50: 10,
    p90: 185,
    source: 'tenant',
  });
  // Ends without a length (cancelled, failed) count as ends: 12 dispatched, 6 ended.
  m.started('interactive', 'a');
  m.started('interactive', 'a');
  m.abandoned('interactive', 'a');
  assert.equal(m.predict('interactive', 'a').p50, 10);
  // A learned p50 above the prior stands either way.
  const h = new OutputLengthModel({ window: 16, minSamples: 4, prior });
  for (let i = 0; i < 10; i++) h.started('batch', 'b');
  for (const v of [400, 500, 600, 900]) h.observe('batch', 'b', v);
  assert.deepEqual(h.predict('batch', 'b'), { p10: 430, p50: 550, p90: 810, source: 'tenant' });
});

test('while only the prior speaks, KV is reserved for `reserve` tokens, within the cap', () => {
  const m = new OutputLengthModel({ window: 16, minSamples: 4, prior, reserve: 4_096 });
  // The prior's p90 is a guess: KV for 4,096 tokens of output, not 800.
  assert.deepEqual(m.predict('interactive', 'a'), {
    p10: 1,
    p50: 200,
    p90: 800,
    source: 'prior',
    reserve: 4_096,
  });
  // Within what the request may generate: its max_tokens or the context left.
  assert.equal(m.predict('interactive', 'a', 1_000).reserve, 1_000);
  // A cap below the prior's p90 leaves nothing to add: the reservation is the p90.
  assert.equal(m.predict('interactive', 'a', 300).reserve, undefined);
  // Once four have ended the class's lengths are learned, and KV is reserved for their p90.
  for (const v of [600, 700, 900, 1_000]) m.observe('interactive', 'b', v);
  const learned = m.predict('interactive', 'a');
  assert.equal(learned.source, 'class');
  assert.equal(learned.reserve, undefined);
  // Set at or below the prior's p90, the prior's p90 is what is reserved.
  const plain = new OutputLengthModel({ prior, reserve: 500 });
  assert.equal(plain.predict('interactive', 'a').reserve, undefined);
  assert.throws(() => new OutputLengthModel({ prior, reserve: 0 }), /reserve/);
  assert.throws(() => new OutputLengthModel({ prior, reserve: 1.5 }), /reserve/);
});

test('while most of what was dispatched still runs, KV is reserved for twice the longest that ended', () => {
  const m = new OutputLengthModel({ window: 16, minSamples: 4, prior, reserve: 4_096 });
  // Heavy-tailed replies at a cold start: twelve dispatched, the first four to end run to 700.
  for (let i = 0; i < 12; i++) m.started('reasoning', 'a');
  for (const v of [300, 500, 600, 700]) m.observe('reasoning', 'a', v);
  const young = m.predict('reasoning', 'a');
  assert.equal(young.p90, 800); // the prior's, as the p50 and p90 are held
  assert.equal(young.reserve, 1_400);
  // Within the cold reserve and the request's cap.
  m.observe('reasoning', 'a', 3_000);
  assert.equal(m.predict('reasoning', 'a').reserve, 4_096);
  const capped = m.predict('reasoning', 'a', 2_000);
  assert.equal(capped.p90, 2_000);
  assert.equal(capped.reserve, undefined);
  // Half have ended: the lengths are what they are, and KV is reserved for their p90.
  const grown = m.predict('reasoning', 'a');
  m.observe('reasoning', 'a', 650);
  assert.equal(grown.reserve, 4_096);
  const settled = m.predict('reasoning', 'a');
  assert.equal(settled.reserve, undefined);
  assert.ok(settled.p90 < grown.reserve!, `${settled.p90}`);
});

test('a class with a prior of its own: its predictions and reserve until its lengths are learned', () => {
  const m = new OutputLengthModel({
    window: 16,
    minSamples: 4,
    prior,
    reserve: 4_096,
    byClass: { reasoning: { p50: 2_000, p90: 8_000, reserve: 16_000 } },
  });
  assert.deepEqual(m.predict('reasoning', 'a'), {
    p10: 1,
    p50: 2_000,
    p90: 8_000,
    source: 'prior',
    reserve: 16_000,
  });
  assert.equal(m.predict('interactive', 'a').p50, 200);
  assert.equal(m.predict('interactive', 'a').reserve, 4_096);
  // While most of its dispatched requests run, learned quantiles are held at its own prior.
  for (let i = 0; i < 10; i++) m.started('reasoning', 'a');
  for (const v of [300, 400, 500, 600]) m.observe('reasoning', 'a', v);
  const young = m.predict('reasoning', 'a');
  assert.equal(young.p50, 2_000);
  assert.equal(young.p90, 8_000);
  // A class's own prior is checked like the default one.
  assert.throws(
    () => new OutputLengthModel({ prior, byClass: { batch: { p50: 9, p90: 3 } } }),
    /prior of batch/,
  );
});

test('a restored model predicts as the one that saved it, and goes on as it would have', () => {
  const saved = new OutputLengthModel({ window: 8, minSamples: 3, prior, reserve: 4_096 });
  for (let i = 1; i <= 12; i++) {
    saved.started('interactive', i % 2 === 0 ? 'a' : 'b');
    saved.observe('interactive', i % 2 === 0 ? 'a' : 'b', 10 * i, i === 11);
  }
  const tenants = ['a', 'b', 'c'];
  const settled = tenants.map((t) => saved.predict('interactive', t));
  // A flood in flight at the save (a's prediction is young now): those requests end in no
  // restarted process, which predicts as the model did before they started.
  for (let i = 0; i < 40; i++) saved.started('interactive', 'a');
  assert.notDeepEqual(saved.predict('interactive', 'a'), settled[0]);
  const restored = new OutputLengthModel({ window: 8, minSamples: 3, prior, reserve: 4_096 });
  restored.restore(saved.snapshot());
  assert.deepEqual(
    tenants.map((t) => restored.predict('interactive', t)),
    settled,
  );
  // The window kept its order: the next output pushes out the same oldest value in both.
  saved.observe('interactive', 'b', 1_000);
  restored.observe('interactive', 'b', 1_000);
  assert.deepEqual(restored.predict('interactive', 'b'), saved.predict('interactive', 'b'));
  // Nothing restored still runs: a new flood of 30 is young against the 12 that ended.
  for (let i = 0; i < 30; i++) restored.started('interactive', 'c');
  assert.equal(restored.predict('interactive', 'c').reserve, 2 * 1_000);
  assert.equal(restored.predict('batch', 'a').source, 'prior');
});

test('a snapshot keeps its window oldest first and which outputs were cut; a smaller window takes the newest', () => {
  const m = new OutputLengthModel({ window: 4, minSamples: 1, prior });
  for (const [v, cut] of [
    [5, false],
    [7, true],
    [9, false],
    [11, false],
    [13, true],
  ] as const) {
    m.observe('batch', 't', v, cut);
  }
  const [c] = m.snapshot();
  assert.equal(c.cls, 'batch');
  assert.deepEqual(c.outputs, [7, 9, 11, 13]);
  assert.deepEqual(c.capped, [0, 3]);
  assert.equal(c.ended, 5);
  assert.deepEqual(c.tenants, [{ tenant: 't', outputs: [7, 9, 11, 13], capped: [0, 3], ended: 5 }]);
  const small = new OutputLengthModel({ window: 2, minSamples: 1, prior });
  small.restore([c]);
  assert.deepEqual(small.snapshot()[0].outputs, [11, 13]);
  assert.deepEqual(small.snapshot()[0].capped, [1]);
});

test(`a snapshot keeps the ${SNAPSHOT_TENANTS} tenants with the most ended requests`, () => {
  const m = new OutputLengthModel({ window: 4, minSamples: 1, prior });
  for (let t = 0; t < SNAPSHOT_TENANTS + 5; t++) {
    for (let i = 0; i <= t % 3; i++) m.observe('interactive', `t${t}`, 10);
  }
  const [c] = m.snapshot();
  assert.equal(c.tenants.length, SNAPSHOT_TENANTS);
  assert.ok(c.tenants.every((t, i) => i === 0 || c.tenants[i - 1].ended >= t.ended));
  assert.equal(c.tenants.at(-1)?.ended, 1);
});

test("a reasoning effort's lengths are learned apart: effort → the tenant's own → class → prior", () => {
  const m = new OutputLengthModel({ window: 16, minSamples: 4, prior });
  // Tenant a thinks long at high effort and answers short at low; b asks no effort.
  for (let i = 0; i < 4; i++) m.observe('reasoning', 'a', 4_000, false, 'high');
  for (let i = 0; i < 4; i++) m.observe('reasoning', 'a', 300, false, 'low');
  assert.equal(m.predict('reasoning', 'a', undefined, 'high').p50, 4_000);
  assert.equal(m.predict('reasoning', 'a', undefined, 'low').p50, 300);
  assert.equal(m.predict('reasoning', 'a', undefined, 'low').source, 'tenant_effort');
  // Its own at any effort holds all eight: a medium effort not yet learned is predicted so.
  const any = m.predict('reasoning', 'a');
  assert.equal(any.source, 'tenant');
  assert.deepEqual(m.predict('reasoning', 'a', undefined, 'medium'), any);
  assert.equal(any.p90, 4_000);
  // Another tenant at high effort has only the class's lengths, every effort's.
  assert.equal(m.predict('reasoning', 'b', undefined, 'high').source, 'class');
  assert.equal(m.distribution('reasoning', 'a', 'low')?.cdf(300), 1);
  assert.equal(m.distribution('reasoning', 'a', 'high')?.cdf(300), 0);
  // Dispatched requests count at their effort too: while most of a's low-effort requests still
  // run, its p90 is no lower than the prior's; the high effort's is its own all along.
  const low = () => m.predict('reasoning', 'a', undefined, 'low').p90;
  assert.equal(low(), 300);
  m.started('reasoning', 'a', 20, 'low');
  assert.equal(low(), prior.p90);
  assert.equal(m.predict('reasoning', 'a', undefined, 'high').p90, 4_000);
  m.abandoned('reasoning', 'a', 20, 'low');
  assert.equal(low(), 300);
});

test('a snapshot keeps each effort apart, and a restored model predicts as the one that saved it', () => {
  const m = new OutputLengthModel({ window: 16, minSamples: 4, prior });
  for (let i = 0; i < 5; i++) m.observe('reasoning', 'a', 4_000 + i, i === 0, 'high');
  for (let i = 0; i < 5; i++) m.observe('reasoning', 'a', 300 + i);
  const [cls] = m.snapshot();
  assert.deepEqual(
    cls.tenants.map((t) => [t.tenant, t.reasoning_effort, t.outputs.length, t.capped]),
    [
      ['a', undefined, 10, [0]],
      ['a', 'high', 5, [0]],
    ],
  );
  const back = new OutputLengthModel({ window: 16, minSamples: 4, prior });
  back.restore(m.snapshot());
  for (const effort of [undefined, 'high', 'low'] as const) {
    assert.deepEqual(
      back.predict('reasoning', 'a', undefined, effort),
      m.predict('reasoning', 'a', undefined, effort),
    );
  }
  assert.deepEqual(back.snapshot(), m.snapshot());
});
