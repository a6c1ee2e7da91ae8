// The client's headers as the gateway reads them, Goodput's and their aliases from the Gateway
// API Inference Extension and llm-d: what each alias means, that a bad value is refused naming
// the header and the value, that a header and its alias disagreeing is refused naming both, and
// which tenant a fairness id may name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveTenants } from '../../core/config/tenant-schema.ts';
import { OpenAiError } from '../../openai/index.ts';
import { askedClass, parseClientHeaders, restated, tenantFor } from './client-headers.ts';

const NOW = 1_700_000_000_000;
const read = (h: Record<string, string>) => parseClientHeaders((n) => h[n] ?? null, NOW);

/** The 400 `fn` throws: its message and param. */
function refusal(fn: () => unknown): { message: string; param: string | null } {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof OpenAiError, String(e));
    assert.equal(e.status, 400);
    return { message: e.message, param: e.param };
  }
  assert.fail('expected a 400');
}

test('the inference objective names the class, under either spelling', () => {
  assert.equal(read({ 'x-gateway-inference-objective': 'batch' }).sloClass, 'batch');
  assert.equal(read({ 'x-llm-d-router-inference-objective': 'reasoning' }).sloClass, 'reasoning');
  const both = { 'x-goodput-class': 'batch', 'x-gateway-inference-objective': 'batch' };
  assert.equal(read(both).sloClass, 'batch', 'the same class twice is one');
});

test('the fairness id and the TTFT and TPOT objectives are read under either spelling', () => {
  const a = read({
    'x-gateway-inference-fairness-id': 'acme',
    'x-slo-ttft-ms': '500',
    'x-llm-d-router-slo-tpot-ms': '20.5',
  });
  assert.deepEqual(a.fairness, { header: 'x-gateway-inference-fairness-id', id: 'acme' });
  assert.deepEqual(a.targets, { ttftMs: 500, tpotMs: 20.5 });
  const b = read({ 'x-llm-d-router-inference-fairness-id': 'acme' });
  assert.deepEqual(b.fairness, { header: 'x-llm-d-router-inference-fairness-id', id: 'acme' });
  assert.equal(b.targets, undefined);
  // The same number spelt two ways is the same target.
  const c = read({ 'x-slo-ttft-ms': '500', 'x-llm-d-router-slo-ttft-ms': '500.0' });
  assert.equal(c.targets?.ttftMs, 500);
});

test('a bad value under any name is a 400 naming that header and the value', () => {
  const cases: Array<[Record<string, string>, string, RegExp]> = [
    [{ 'x-gateway-inference-objective': 'premium' }, 'x-gateway-inference-objective', /"premium"/],
    [
      { 'x-llm-d-router-inference-objective': 'vip' },
      'x-llm-d-router-inference-objective',
      /"vip"/,
    ],
    [{ 'x-gateway-inference-fairness-id': 'a b' }, 'x-gateway-inference-fairness-id', /"a b"/],
    [{ 'x-llm-d-router-inference-fairness-id': '' }, 'x-llm-d-router-inference-fairness-id', /""/],
    [{ 'x-slo-ttft-ms': 'soon' }, 'x-slo-ttft-ms', /"soon"/],
    [{ 'x-slo-ttft-ms': '0' }, 'x-slo-ttft-ms', /"0"/],
    [{ 'x-llm-d-router-slo-ttft-ms': '-5' }, 'x-llm-d-router-slo-ttft-ms', /"-5"/],
    [{ 'x-slo-tpot-ms': '1e12' }, 'x-slo-tpot-ms', /"1e12"/],
    [{ 'x-llm-d-router-slo-tpot-ms': 'NaN' }, 'x-llm-d-router-slo-tpot-ms', /"NaN"/],
    // Decimal only: JavaScript's Number would read these as 16, 3 and 1000.
    [{ 'x-goodput-timeout-ms': '0x10' }, 'x-goodput-timeout-ms', /"0x10"/],
    [{ 'x-goodput-attempt': '0b11' }, 'x-goodput-attempt', /"0b11"/],
    [{ 'x-slo-ttft-ms': '1e3' }, 'x-slo-ttft-ms', /"1e3"/],
    [{ 'x-stainless-retry-count': '-1' }, 'x-stainless-retry-count', /"-1"/],
    [{ 'x-stainless-retry-count': '1.5' }, 'x-stainless-retry-count', /"1\.5"/],
  ];
  for (const [headers, name, value] of cases) {
    const r = refusal(() => read(headers));
    assert.equal(r.param, name);
    assert.ok(r.message.startsWith(`${name}: expected `), r.message);
    assert.match(r.message, value);
  }
});

test('a header and its alias that disagree are a 400 naming both and both values', () => {
  const cases: Array<[Record<string, string>, string, string]> = [
    [
      { 'x-goodput-class': 'batch', 'x-gateway-inference-objective': 'interactive' },
      'x-goodput-class ("batch")',
      'x-gateway-inference-objective ("interactive")',
    ],
    [
      {
        'x-gateway-inference-objective': 'batch',
        'x-llm-d-router-inference-objective': 'reasoning',
      },
      'x-gateway-inference-objective ("batch")',
      'x-llm-d-router-inference-objective ("reasoning")',
    ],
    [
      { 'x-gateway-inference-fairness-id': 'a', 'x-llm-d-router-inference-fairness-id': 'b' },
      'x-gateway-inference-fairness-id ("a")',
      'x-llm-d-router-inference-fairness-id ("b")',
    ],
    [
      { 'x-slo-ttft-ms': '500', 'x-llm-d-router-slo-ttft-ms': '600' },
      'x-slo-ttft-ms ("500")',
      'x-llm-d-router-slo-ttft-ms ("600")',
    ],
    [
      { 'x-session-id': 's1', 'x-goodput-session': 's2' },
      'x-session-id ("s1")',
      'x-goodput-session ("s2")',
    ],
  ];
  for (const [headers, first, second] of cases) {
    const r = refusal(() => read(headers));
    assert.ok(r.message.includes(first) && r.message.includes(second), r.message);
    assert.match(r.message, /disagree/);
  }
});

test('a fairness id names a tenant the policy lists; with API keys, only the key’s own', () => {
  const listed = resolveTenants({ acme: {}, beta: {} });
  const via = { header: 'x-gateway-inference-fairness-id', id: 'beta' };
  // Without keys it chooses among the policy's tenants, `default` included.
  assert.equal(tenantFor('default', via, false, listed), 'beta');
  assert.equal(tenantFor('default', { ...via, id: 'default' }, false, listed), 'default');
  assert.equal(tenantFor('default', undefined, false, listed), 'default');
  const unlisted = refusal(() => tenantFor('default', { ...via, id: 'mallory' }, false, listed));
  assert.match(
    unlisted.message,
    /^x-gateway-inference-fairness-id: expected a tenant the policy lists, or default, got "mallory"$/,
  );
  // Nor does a policy without a tenants section let a client make one up.
  const open = resolveTenants(undefined);
  assert.throws(() => tenantFor('default', via, false, open), OpenAiError);
  // With keys, the key decides; the fairness id may only agree with it.
  assert.equal(tenantFor('beta', via, true, listed), 'beta');
  const other = refusal(() => tenantFor('acme', via, true, listed));
  assert.equal(other.param, 'x-gateway-inference-fairness-id');
  assert.match(other.message, /"beta" is not the tenant of the API key \("acme"\)/);
});

test('a request shed unread is counted in the class it asked for under any spelling', () => {
  const h = (v: Record<string, string>) => (n: string) => v[n] ?? null;
  assert.equal(askedClass(h({ 'x-gateway-inference-objective': 'batch' })), 'batch');
  assert.equal(askedClass(h({ 'x-goodput-class': 'nonsense' })), undefined);
  assert.equal(askedClass(h({})), undefined);
});

test("the attempt: x-goodput-attempt, else the OpenAI SDKs' retry count plus one", () => {
  const attempt = (h: Record<string, string>) => {
    const { attempt: n, sdkRetry } = read(h);
    return [n, sdkRetry];
  };
  assert.deepEqual(attempt({}), [1, false]);
  assert.deepEqual(attempt({ 'x-stainless-retry-count': '0' }), [1, false], 'its first attempt');
  assert.deepEqual(attempt({ 'x-stainless-retry-count': '2' }), [3, true], 'its second retry');
  assert.deepEqual(
    attempt({ 'x-goodput-attempt': '2', 'x-stainless-retry-count': '0' }),
    [2, false],
    'the declared attempt wins (a client that retries itself, through an SDK that does not)',
  );
});

test('headers restated for another replica read back as they were, but the key and the fairness id', () => {
  const asked = read({
    'x-gateway-inference-objective': 'batch',
    'x-goodput-timeout-ms': '60000',
    'x-goodput-attempt': '2',
    'x-goodput-session': 'conv-7',
    'x-llm-d-router-slo-ttft-ms': '500',
    'x-slo-tpot-ms': '40',
    'idempotency-key': 'k-1',
    'x-gateway-inference-fairness-id': 'acme',
  });
  const again = read(restated(asked));
  const { idempotencyKey, fairness, classHeader, ...rest } = asked;
  assert.deepEqual(
    [idempotencyKey, fairness?.id, classHeader],
    ['k-1', 'acme', 'x-gateway-inference-objective'],
  );
  const none = { classHeader: undefined, idempotencyKey: undefined, fairness: undefined };
  assert.deepEqual({ ...again, ...none }, { ...rest, ...none });
  assert.equal(again.deadlineEpochMs, NOW + 60_000, 'the deadline as it was, not anew');
  assert.deepEqual(restated(read({})), {}, 'nothing told, nothing restated');
});
