import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ENVELOPE_KIND, envelopeCapacity, parseEnvelope } from './capacity-envelope.ts';

const doc = {
  kind: ENVELOPE_KIND,
  version: 1,
  rate_per_group_rps: 6,
  target: 0.99,
  mix: { input_mean: 1000, output_mean: 200 },
  groups: 1,
  source: 'simulator:goodput',
  probes: [],
};

test('capacity envelope: the measured rate anchors the model; other mixes scale by the model', () => {
  // A model that says 10 req/s at the measured mix and half that at twice the output.
  const model = (_input: number, output: number) => ({ rps: 2000 / output, streams: 64 });
  const c = envelopeCapacity(model, parseEnvelope(doc));
  assert.deepEqual(c(1000, 200), { rps: 6, streams: 64 });
  assert.deepEqual(c(1000, 400), { rps: 3, streams: 64 });
});

test('capacity envelope: a bad file names the field and the value', () => {
  assert.throws(
    () => parseEnvelope({ ...doc, rate_per_group_rps: -1 }, 'env.json'),
    /env\.json: rate_per_group_rps: expected a number > 0, got -1/,
  );
  assert.throws(() => parseEnvelope({ ...doc, kind: 'report' }), /kind: expected/);
  assert.throws(
    () => parseEnvelope({ ...doc, mix: { input_mean: 5 } }),
    /mix\.output_mean: expected a number/,
  );
});
