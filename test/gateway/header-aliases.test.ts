// The Gateway API Inference Extension's and llm-d's request headers through a real gateway: the
// inference objective chooses the class, the fairness id the tenant (the key's own, when keys are
// required; one the policy lists, when not), the TTFT and TPOT objectives are taken and served;
// a bad value, or an alias disagreeing with Goodput's own header or the key, is a 400 naming
// them, counted as unreadable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sha256 } from '../../src/gateway/api-keys.ts';
import { engines, gateway, metricValue, policyWith, postChat } from './gateway-kit.ts';

const hex = (k: string) => sha256(k).toString('hex');
const backends = await engines(1);
const keyed = await gateway(
  backends,
  policyWith({
    tenants: {
      acme: { api_keys_sha256: [hex('sk-acme')] },
      lowly: { api_keys_sha256: [hex('sk-lowly')], classes: ['batch'] },
    },
  }),
);
// No keys, two tenants and no `default`: a request names its tenant, or is not served.
const open = await gateway(backends, policyWith({ tenants: { acme: {}, beta: {} } }));

/** A short chat through `gw`; the status and, for a refusal, its message and param. */
async function chat(url: string, headers: Record<string, string>) {
  const res = await postChat(url, { max_tokens: 2 }, headers);
  const body = (await res.json()) as { error?: { message: string; param: string | null } };
  return { status: res.status, error: body.error };
}

test('the inference objective is the class asked for, granted or not by the policy', async () => {
  const lowly = { authorization: 'Bearer sk-lowly' };
  const ok = await chat(keyed.url, { ...lowly, 'x-gateway-inference-objective': 'batch' });
  assert.equal(ok.status, 200);
  const served = { class: 'batch', tenant: 'lowly' };
  assert.equal(await metricValue(keyed.url, 'goodput_offered_requests_total', served), 1);
  const denied = await chat(keyed.url, {
    ...lowly,
    'x-llm-d-router-inference-objective': 'interactive',
  });
  assert.equal(denied.status, 403, 'the alias asks, as x-goodput-class does; it never grants');
});

test('the fairness id names the tenant: with keys the key’s own, else one the policy lists', async () => {
  const acme = { authorization: 'Bearer sk-acme' };
  assert.equal(
    (await chat(keyed.url, { ...acme, 'x-gateway-inference-fairness-id': 'acme' })).status,
    200,
  );
  const other = await chat(keyed.url, { ...acme, 'x-gateway-inference-fairness-id': 'lowly' });
  assert.equal(other.status, 400);
  assert.equal(other.error?.param, 'x-gateway-inference-fairness-id');
  assert.match(other.error?.message ?? '', /"lowly" is not the tenant of the API key \("acme"\)/);

  const beta = await chat(open.url, { 'x-llm-d-router-inference-fairness-id': 'beta' });
  assert.equal(beta.status, 200);
  const counted = { tenant: 'beta' };
  assert.equal(await metricValue(open.url, 'goodput_offered_requests_total', counted), 1);
  const unlisted = await chat(open.url, { 'x-gateway-inference-fairness-id': 'mallory' });
  assert.equal(unlisted.status, 400);
  assert.match(unlisted.error?.message ?? '', /expected a tenant the policy lists.*"mallory"/);
});

test('TTFT and TPOT objectives are taken; a bad one, or two that disagree, is a 400 naming them', async () => {
  const slo = {
    'x-gateway-inference-fairness-id': 'beta',
    'x-slo-ttft-ms': '1500',
    'x-llm-d-router-slo-tpot-ms': '40',
  };
  assert.equal((await chat(open.url, slo)).status, 200);
  const before = await metricValue(open.url, 'goodput_invalid_requests_total', {
    reason: 'invalid_request',
  });
  const bad = await chat(open.url, { 'x-slo-tpot-ms': 'fast' });
  assert.equal(bad.status, 400);
  assert.equal(
    bad.error?.message,
    'x-slo-tpot-ms: expected milliseconds in (0, 86400000], got "fast"',
  );
  const split = await chat(open.url, {
    'x-goodput-class': 'batch',
    'x-gateway-inference-objective': 'interactive',
  });
  assert.equal(split.status, 400);
  assert.match(
    split.error?.message ?? '',
    /^x-goodput-class \("batch"\) and x-gateway-inference-objective \("interactive"\) disagree/,
  );
  const after = await metricValue(open.url, 'goodput_invalid_requests_total', {
    reason: 'invalid_request',
  });
  assert.equal(after - before, 2, 'each counted as a request that could not be read');
});
