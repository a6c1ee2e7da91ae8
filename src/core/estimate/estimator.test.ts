// Tests for estimateDemand (estimator.ts): what a request will cost, where it is prefilled.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { estimateDemand, tenantCharge } from './estimator.ts';
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

test('a reply that ignores EOS (or has a min_tokens) is predicted at least that long, and charged so', () => {
  const outputs = new OutputLengthModel({ prior: { p50: 100, p90: 400 } });
  const demand = (o: Parameters<typeof request>[0]) =>
    estimateDemand(request(o), DEFAULT_SLO_CLASSES.interactive, fleet(), outputs, prefill).output;
  const natural = demand({ maxTokens: 3_000 });
  assert.deepEqual([natural.p50, natural.p90], [100, 400]);
  const ignoresEos = demand({ maxTokens: 3_000, minTokens: 3_000 });
  assert.deepEqual([ignoresEos.p10, ignoresEos.p50, ignoresEos.p90], [3_000, 3_000, 3_000]);
  const atLeast = demand({ maxTokens: 3_000, minTokens: 200 });
  assert.deepEqual([atLeast.p10, atLeast.p50, atLeast.p90], [200, 200, 400]);
  // Without a cap, ignoring EOS runs to the context: 8,192 less the prompt.
  const uncapped = demand({ inputTokens: 192, minTokens: Infinity });
  assert.equal(uncapped.p50, 8_000);
  const charged = tenantCharge(
    request({ inputTokens: 192, minTokens: Infinity }),
    DEFAULT_SLO_CLASSES.interactive,
    SPEC,
    outputs,
  );
  assert.equal(charged, 8_192);
});
