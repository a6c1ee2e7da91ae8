import { test } from 'node:test';
import assert from 'node:assert/strict';
import { presetPolicy } from '../config/presets.ts';
import { ConfigError } from '../errors.ts';
import { Learned } from './learned.ts';
import { learnedStateText, parseLearnedState, restoreLearned } from './learned-state.ts';
import { PromptScale } from './prompt-scale.ts';

const SAVED_AT = Date.parse('2026-12-04T12:00:00Z');

function taught(): Learned {
  const l = new Learned(presetPolicy('goodput'));
  for (let i = 0; i < 30; i++) {
    l.outputs.started('interactive', 'acme');
    l.outputs.observe('interactive', 'acme', 100 + 10 * i, i === 3);
  }
  l.outputs.observe('batch', '__proto__', 2_000);
  return l;
}

test('learned state goes through its text and back: the restored pipeline predicts as the saved', () => {
  const text = learnedStateText(taught(), SAVED_AT);
  const state = parseLearnedState(text);
  assert.equal(state.savedAtMs, SAVED_AT);
  const fresh = new Learned(presetPolicy('goodput'));
  assert.equal(fresh.outputs.predict('interactive', 'acme').source, 'prior');
  const cold = fresh.restored;
  assert.equal(cold, undefined);
  assert.deepEqual(restoreLearned(fresh, state), {
    saved_at: '2026-12-04T12:00:00.000Z',
    classes: { interactive: 30, batch: 1 },
    tenants: 2,
  });
  assert.deepEqual(fresh.restored?.classes, { interactive: 30, batch: 1 });
  for (const [cls, tenant] of [
    ['interactive', 'acme'],
    ['interactive', 'other'],
    ['batch', '__proto__'],
  ] as const) {
    assert.deepEqual(
      fresh.outputs.predict(cls, tenant),
      taught().outputs.predict(cls, tenant),
      `${cls}/${tenant}`,
    );
  }
  assert.equal(fresh.outputs.predict('interactive', 'acme').source, 'tenant');
  assert.equal(learnedStateText(fresh, SAVED_AT), text);
});

test("a tenant's lengths at a reasoning effort go through the text apart from its others", () => {
  const l = new Learned(presetPolicy('goodput'));
  for (let i = 0; i < 25; i++) {
    l.outputs.observe('reasoning', 'acme', 3_000 + i, false, 'high');
    l.outputs.observe('reasoning', 'acme', 200 + i, false, 'low');
  }
  const text = learnedStateText(l, SAVED_AT);
  const fresh = new Learned(presetPolicy('goodput'));
  assert.equal(restoreLearned(fresh, parseLearnedState(text)).tenants, 3);
  for (const effort of ['high', 'low', undefined] as const) {
    assert.deepEqual(
      fresh.outputs.predict('reasoning', 'acme', undefined, effort),
      l.outputs.predict('reasoning', 'acme', undefined, effort),
      String(effort),
    );
  }
  assert.equal(learnedStateText(fresh, SAVED_AT), text);
  const doc = JSON.parse(text) as { output_lengths: { tenants: object[] }[] };
  doc.output_lengths[0].tenants[1] = {
    ...doc.output_lengths[0].tenants[1],
    reasoning_effort: 'max',
  };
  assert.throws(
    () => parseLearnedState(JSON.stringify(doc)),
    (e: unknown) =>
      e instanceof ConfigError &&
      /^output_lengths\[0\]\.tenants\[1\]\.reasoning_effort: expected one of low, medium, high, got "max"/.test(
        e.message,
      ),
  );
});

test('what images by URL took goes through the text too, its last 256, oldest first', () => {
  const samples = Array.from({ length: 300 }, (_, i) => 500 + i + 0.5);
  const state = parseLearnedState(
    learnedStateText(taught(), SAVED_AT, { urlImageTokens: samples }),
  );
  assert.deepEqual(state.urlImageTokens, samples.slice(-256));
  assert.deepEqual(parseLearnedState(learnedStateText(taught(), SAVED_AT)).urlImageTokens, []);
  assert.ok(!learnedStateText(taught(), SAVED_AT).includes('url_image_tokens'));
});

test("the sums a gateway's prompts are scaled by go through the text, exactly", () => {
  const scale = new PromptScale();
  for (let x = 40; x < 4_000; x += 97) scale.observe('latin', x, Math.round(0.77 * x) + 25);
  const text = learnedStateText(taught(), SAVED_AT, { promptScale: scale.sums() });
  const state = parseLearnedState(text);
  assert.deepEqual(state.promptScale, scale.sums());
  const restarted = new PromptScale();
  restarted.restore(state.promptScale);
  assert.deepEqual(restarted.lines(), scale.lines());
  assert.equal(learnedStateText(taught(), SAVED_AT, { promptScale: restarted.sums() }), text);
  assert.deepEqual(parseLearnedState(learnedStateText(taught(), SAVED_AT)).promptScale, {});
  assert.ok(!learnedStateText(taught(), SAVED_AT, { promptScale: {} }).includes('prompt_scale'));
  // Sums no pairs could have made are refused, naming the field.
  const good = JSON.parse(text) as { prompt_scale: { latin: Record<string, number> } };
  const latin = good.prompt_scale.latin;
  const cases: [unknown, RegExp][] = [
    [
      { latin: { ...latin, weight: latin.pairs + 1 } },
      /^prompt_scale\.latin\.weight: expected at most pairs, 41, got 42/,
    ],
    [{ latin: { ...latin, uu: latin.u * 2 } }, /^prompt_scale\.latin\.uu: expected at most u/],
    [{ latin: { ...latin, r: -1 } }, /^prompt_scale\.latin\.r: /],
    [{ latin: { ...latin, pairs: 1e6, weight: 400 } }, /^prompt_scale\.latin\.weight: .*got 400/],
    [{ greek: latin }, /^prompt_scale: expected a key among latin, other, got "greek"$/],
  ];
  for (const [promptScale, message] of cases) {
    assert.throws(
      () => parseLearnedState(JSON.stringify({ ...good, prompt_scale: promptScale })),
      (e: unknown) => e instanceof ConfigError && message.test(e.message),
      JSON.stringify(promptScale),
    );
  }
});

test('a model that learned nothing saves a state that restores to nothing', () => {
  const empty = parseLearnedState(learnedStateText(new Learned(presetPolicy('goodput')), 0));
  assert.deepEqual(empty.outputLengths, []);
});

test('a learned state that is not one is refused, naming the field and the value', () => {
  const good = JSON.parse(learnedStateText(taught(), SAVED_AT)) as Record<string, unknown>;
  const classes = good.output_lengths as Record<string, unknown>[];
  const cases: [unknown, RegExp][] = [
    [{ ...good, format: 'other' }, /^format: expected .*goodput\.learned-state.*got "other"/],
    [{ ...good, version: 2 }, /^version: .*got 2/],
    [{ ...good, saved_at: 'yesterday' }, /^saved_at: .*got "yesterday"/],
    [
      { ...good, output_lengths: [{ ...classes[0], class: 'gold' }] },
      /^output_lengths\[0\]\.class: expected one of interactive, .*got "gold"/,
    ],
    [
      { ...good, output_lengths: [{ ...classes[0], outputs: [1, -4] }] },
      /^output_lengths\[0\]\.outputs\[1\]: expected a number ≥ 0, got -4/,
    ],
    [
      { ...good, output_lengths: [{ ...classes[0], capped: [99] }] },
      /^output_lengths\[0\]\.capped\[0\]: expected an index into outputs \(< 30\), got 99/,
    ],
    [
      { ...good, output_lengths: [{ ...classes[0], ended: 2 }] },
      /^output_lengths\[0\]\.ended: expected at least the 30 outputs kept, got 2/,
    ],
    [
      { ...good, output_lengths: [classes[0], classes[0]] },
      /^output_lengths\[1\]\.class: expected each class once, got "interactive"/,
    ],
    [{ ...good, extra: 1 }, /^\(root\): expected a key among format, version, .*, got "extra"$/],
    [
      { ...good, url_image_tokens: [900, 0] },
      /^url_image_tokens\[1\]: expected a number > 0, got 0/,
    ],
  ];
  for (const [doc, message] of cases) {
    assert.throws(
      () => parseLearnedState(JSON.stringify(doc)),
      (e: unknown) => e instanceof ConfigError && message.test(e.message),
      message.source,
    );
  }
  assert.throws(
    () => parseLearnedState('{"format": "goodput.learned-st'),
    (e: unknown) => e instanceof ConfigError && /^\(root\): expected JSON/.test(e.message),
  );
});
