// Tests for estimateDemand (estimator.ts): what a request will cost, where it is prefilled.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { estimateDemand } from './estimator.ts';
import { OutputLengthModel } from './output-length-model.ts';
import { DEFAULT_SLO_CLASSES } from '../request/slo-classes.ts';
import { SPEC, fleet, request } from '../admission/admission-test-kit.ts';

const prefill = (tokens: number) => tokens / 10;

test('colocated: the prompt is prefilled where it decodes, with no hand-over', () => {
  const d = estimateDemand(
    request({ inputTokens: 2_000 }),
    DEFAULT_SLO_CLASSES.interactive,
    fleet({ prefillQueueMs: 300 }),
    new OutputLengthModel({ prior: { p50: 100, p90: 400 } }),
    prefill,
  );
  assert.equal(d.prefillMs, 200);
  assert.equal(d.handoverMs, 0, 'a pool queue only counts where a prefill pool computes prompts');
});

test('disaggregated: the hand-over is the prefill pool queue plus the whole prompt KV transfer', () => {
  const sent: number[] = [];
  const spec = {
    ...SPEC,
    prefilledElsewhere: true,
    kvTransferMs: (tokens: number) => {
      sent.push(tokens);
      return 2 + tokens / 1_000;
    },
  };
  const d = estimateDemand(
    request({ inputTokens: 2_000 }),
    DEFAULT_SLO_CLASSES.interactive,
    fleet({ spec, prefillQueueMs: 300 }),
    new OutputLengthModel({ prior: { p50: 100, p90: 400 } }),
    prefill,
    500,
  );
  assert.equal(d.prefillMs, 150, 'the pool still computes what no cache holds');
  assert.equal(d.handoverMs, 300 + 4);
  assert.deepEqual(sent, [2_000], 'all of the prompt KV crosses, cached or not');
});
