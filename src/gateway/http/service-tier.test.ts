import assert from 'node:assert/strict';
import test from 'node:test';
import { resolvePolicy } from '../../core/config/policy.ts';
import { OpenAiError, parseChatCompletionRequest } from '../../openai/index.ts';
import { parseClientHeaders } from './client-headers.ts';
import { classOfTier, mayNameTier, unreadClasses } from './service-tier.ts';

const policy = (tiers?: object) =>
  resolvePolicy({
    name: 't',
    policy_revision: 't@1',
    admission: { type: 'goodput' },
    routing: { type: 'least-request' },
    ...(tiers === undefined ? {} : { service_tiers: tiers }),
  });
const TIERED = policy({ flex: 'batch', priority: 'interactive' });
const headers = (h: Record<string, string> = {}) =>
  parseClientHeaders((name) => h[name] ?? null, Date.now());

/** The 400 `fn` throws: its message and code. */
function refused(fn: () => unknown): { message: string; code: string | null } {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof OpenAiError && e.status === 400, String(e));
    return { message: e.message, code: e.code };
  }
  assert.fail('not refused');
}

test('a tier the policy maps is served in its class; auto, default and none keep the asked one', () => {
  assert.equal(classOfTier('flex', TIERED, headers(), 'interactive'), 'batch');
  assert.equal(classOfTier('priority', TIERED, headers(), 'batch'), 'interactive');
  for (const tier of ['auto', 'default', undefined] as const)
    assert.equal(classOfTier(tier, TIERED, headers(), 'reasoning'), 'reasoning');
});

test('a tier the policy maps to no class is refused by name, with the tiers offered', () => {
  const scale = refused(() => classOfTier('scale', TIERED, headers(), 'interactive'));
  assert.equal(
    scale.message,
    'service_tier: not offered by this gateway (expected auto, default, flex, priority or absent), got "scale"',
  );
  // The default policy maps none.
  const flex = refused(() => classOfTier('flex', policy(), headers(), 'interactive'));
  assert.match(flex.message, /\(expected auto, default or absent\), got "flex"$/);
});

test('a tier and a class header that disagree are refused naming both; agreeing, served', () => {
  const h = headers({ 'x-gateway-inference-objective': 'interactive' });
  const both = refused(() => classOfTier('flex', TIERED, h, 'interactive'));
  assert.equal(both.code, 'conflicting_fields');
  assert.equal(
    both.message,
    'x-gateway-inference-objective ("interactive") and service_tier ("flex", served as batch) disagree: send one of them, or name the same class in both',
  );
  const same = headers({ 'x-goodput-class': 'batch' });
  assert.equal(classOfTier('flex', TIERED, same, 'batch'), 'batch');
});

test('unread, a request may be in any class a tier names, unless a header named its class', () => {
  assert.deepEqual(unreadClasses(TIERED, headers(), 'reasoning'), [
    'reasoning',
    'batch',
    'interactive',
  ]);
  assert.deepEqual(unreadClasses(TIERED, headers(), 'interactive'), ['interactive', 'batch']);
  assert.deepEqual(unreadClasses(policy(), headers(), 'interactive'), ['interactive']);
  const named = headers({ 'x-goodput-class': 'interactive' });
  assert.deepEqual(unreadClasses(TIERED, named, 'interactive'), ['interactive']);
});

test('service_tier takes OpenAI’s five tiers, and anything else is refused naming them', () => {
  const chat = (service_tier: unknown) =>
    parseChatCompletionRequest({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      service_tier,
    });
  for (const t of ['auto', 'default', 'flex', 'scale', 'priority', null])
    assert.equal(chat(t).service_tier, t);
  assert.equal(
    refused(() => chat('turbo')).message,
    'service_tier: expected one of auto, default, flex, scale, priority, got "turbo"',
  );
});

test('a policy maps tiers to classes it knows, and tiers OpenAI names', () => {
  assert.throws(() => policy({ flex: 'bulk' }), /service_tiers\.flex/);
  assert.throws(() => policy({ turbo: 'batch' }), /service_tiers/);
});

test('a body may name a tier with its key as written or escaped; text that only looks so does not', () => {
  const body = (fields: object) => JSON.stringify({ model: 'm', messages: [], ...fields });
  assert.equal(mayNameTier(body({ service_tier: 'flex' })), true);
  assert.equal(mayNameTier(body({})), false);
  const escaped = body({ service_tier: 'flex' }).replace('service_tier', 'service\\u005ftier');
  assert.equal(JSON.parse(escaped).service_tier, 'flex', 'the same key to a parser');
  assert.equal(mayNameTier(escaped), true);
  const every = [...'service_tier'].map(
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  assert.equal(
    mayNameTier(body({}).replace('"model"', `"${every.join('')}"`)),
    true,
    'every letter',
  );
  // Escapes elsewhere: in a value, a key of another name, a value that reads service_tier.
  const python = body({ messages: [{ role: 'user', content: 'café'.repeat(50_000) }] }).replaceAll(
    'é',
    '\\u00e9',
  );
  assert.equal(mayNameTier(python), false);
  assert.equal(mayNameTier(body({ 'caf\u00e9_service': 1 }).replace('é', '\\u00e9')), false);
  assert.equal(mayNameTier(body({ note: 'service\\u005ftier' })), false, 'a value, not a key');
});
