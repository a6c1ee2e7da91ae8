// Tests for checkContract (contract-gate.ts): tenant, class, model, adapter, stream, length.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkContract } from './contract-gate.ts';
import { type GateInput } from './gate.ts';
import {
  SPEC,
  TENANT,
  fleet,
  gateInput,
  request,
  expectedVerdict,
  type WantVerdict,
} from './admission-test-kit.ts';

/** A context window wide enough that the reasoning class's output budget binds first. */
const WIDE = fleet({ spec: { ...SPEC, maxModelLen: 65_536 } });
const ONLY_BATCH = { ...TENANT, classes: ['batch' as const] };
const NO_STREAM = { ...TENANT, streamAllowed: false };

const contractCases: { name: string; input: GateInput; want: WantVerdict }[] = [
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
    name: 'the base model, to a tenant granted only an adapter: a model it cannot see',
    input: gateInput({ tenant: { ...TENANT, models: ['a1'] }, req: request({ model: 'm' }) }),
    want: { reason: 'unknown_model', status: 404 },
  },
  {
    name: 'an adapter the tenant is not granted',
    input: gateInput({ tenant: { ...TENANT, models: ['m'] }, req: request({ adapter: 'a1' }) }),
    want: { reason: 'unknown_model', status: 404 },
  },
  {
    name: 'an adapter the tenant is granted',
    input: gateInput({
      tenant: { ...TENANT, models: ['m', 'a1'] },
      req: request({ adapter: 'a1' }),
    }),
    want: 'pass',
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
    want: {
      reason: 'context_length',
      status: 400,
      context: { promptTokens: 8_192, limitTokens: 8_192, limit: 'context_window' },
    },
  },
  {
    name: 'an estimated prompt over the window, but maybe within it: left to the backend',
    input: gateInput({ req: request({ inputTokens: 9_450, inputTokensAtLeast: 600 }) }),
    want: 'pass',
  },
  {
    name: 'an estimated prompt surely over the window: refused on what it is sure to be',
    input: gateInput({ req: request({ inputTokens: 40_000, inputTokensAtLeast: 9_000 }) }),
    want: {
      reason: 'context_length',
      status: 400,
      context: {
        promptTokens: 9_000,
        promptAtLeast: true,
        limitTokens: 8_192,
        limit: 'context_window',
      },
    },
  },
  {
    name: 'prompt one token short of the window',
    input: gateInput({ req: request({ inputTokens: 8_191 }) }),
    want: 'pass',
  },
  {
    name: 'prompt + max_tokens = 8193',
    input: gateInput({ req: request({ inputTokens: 8_000, maxTokens: 193 }) }),
    want: {
      reason: 'context_length',
      status: 400,
      context: {
        promptTokens: 8_000,
        outputTokens: 193,
        limitTokens: 8_192,
        limit: 'context_window',
      },
    },
  },
  {
    name: 'prompt + max_tokens = 8192',
    input: gateInput({ req: request({ inputTokens: 8_000, maxTokens: 192 }) }),
    want: 'pass',
  },
  {
    name: 'over the output budget, but the narrow window is reported first',
    input: gateInput({ req: request({ sloClass: 'reasoning', maxTokens: 32_769 }) }),
    want: {
      reason: 'context_length',
      status: 400,
      context: {
        promptTokens: 1_000,
        outputTokens: 32_769,
        limitTokens: 8_192,
        limit: 'context_window',
      },
    },
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
  test(`contract: ${c.name}`, () =>
    assert.deepEqual(checkContract(c.input), expectedVerdict(c.want), c.name));
}
