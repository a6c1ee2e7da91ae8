import { test } from 'node:test';
import assert from 'node:assert/strict';
import { benchCall } from './bench-call.ts';
import { SeededRng } from '../runtime/seeded-rng.ts';
import type { LlmRequest } from '../core/request/request.ts';

const req: LlmRequest = {
  id: 'r1',
  arrivalMs: 1_000,
  inputTokens: 8,
  outputTokens: 4,
  tenant: 'default',
  sloClass: 'interactive',
};
const shape = { endpoint: 'chat', model: 'm', sendClass: true } as const;

test("a request's client deadline travels as x-goodput-timeout-ms, relative to its arrival", () => {
  const call = benchCall({ ...req, deadlineMs: 1_400 }, shape, new SeededRng(1));
  assert.equal(call.headers['x-goodput-timeout-ms'], '400');
  assert.equal(call.headers['x-goodput-class'], 'interactive');
  assert.equal(benchCall(req, shape, new SeededRng(1)).headers['x-goodput-timeout-ms'], undefined);
});

test("a request's choices travel as its n, and the call times them choice by choice", () => {
  for (const endpoint of ['chat', 'completions'] as const) {
    const call = benchCall({ ...req, choices: 4 }, { ...shape, endpoint }, new SeededRng(1));
    assert.equal(JSON.parse(call.body).n, 4);
    assert.equal(call.choices, 4);
  }
  const one = benchCall(req, shape, new SeededRng(1));
  assert.equal(JSON.parse(one.body).n, undefined);
  assert.equal(one.choices, undefined);
});
