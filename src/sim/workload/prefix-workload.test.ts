// The prefix-heavy workload: deterministic, sessions resend their history (each turn's prompt
// extends the last one's), hot prefixes and documents are shared across requests, and the mix
// is parsed with errors naming the option.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LlmRequest } from '../../core/request/request.ts';
import { ConfigError } from '../../core/errors.ts';
import { SeededRng } from '../../runtime/seeded-rng.ts';
import { parseClassSpec } from './class-spec.ts';
import { parseLengthSpec } from './length-spec.ts';
import {
  DEFAULT_PREFIX_MIX,
  PREFIX_BLOCK_TOKENS,
  formatPrefixMix,
  parsePrefixMix,
  prefixRequests,
  type PrefixPlan,
} from './prefix-workload.ts';
import { parseTenantSpec } from './tenant-spec.ts';

const plan = (mix = DEFAULT_PREFIX_MIX, count = 2_000): PrefixPlan => ({
  arrivals: { rateRps: 10, burstiness: 1, count },
  mix,
  output: parseLengthSpec('exp:200', '--output'),
  tenants: parseTenantSpec('zipf:6:1.1'),
  classes: parseClassSpec('interactive'),
});

const all = (p: PrefixPlan, seed = 5): LlmRequest[] => [...prefixRequests(p, new SeededRng(seed))];

/** Blocks two prompts share from their start. */
function shared(a: LlmRequest, b: LlmRequest): number {
  const x = a.prefix?.hashes ?? [];
  const y = b.prefix?.hashes ?? [];
  let n = 0;
  while (n < x.length && n < y.length && x[n] === y[n]) n++;
  return n;
}

test('the same seed gives the same requests, another seed others', () => {
  const a = all(plan(), 5);
  assert.deepEqual(a, all(plan(), 5));
  assert.notDeepEqual(a.slice(0, 50), all(plan(), 6).slice(0, 50));
  assert.ok(a.every((r, i) => i === 0 || r.arrivalMs >= a[i - 1].arrivalMs));
});

test('every prompt carries the hashes of its full blocks', () => {
  for (const r of all(plan())) {
    assert.equal(r.prefix?.blockTokens, PREFIX_BLOCK_TOKENS);
    assert.equal(r.prefix?.hashes.length, Math.floor(r.inputTokens / PREFIX_BLOCK_TOKENS));
  }
});

test("a session's next turn resends its history: its prompt starts with the last one", () => {
  const reqs = all(plan({ chat: 1, hot: 0, docs: 0, agent: 0 }));
  const bySession = new Map<string, LlmRequest[]>();
  for (const r of reqs) {
    assert.ok(r.session !== undefined);
    bySession.set(r.session, [...(bySession.get(r.session) ?? []), r]);
  }
  let followUps = 0;
  for (const turns of bySession.values()) {
    assert.ok(turns.length <= 8);
    for (let k = 1; k < turns.length; k++) {
      const prev = turns[k - 1];
      // The earlier prompt, then its reply, then a new message.
      assert.ok(turns[k].inputTokens > prev.inputTokens + prev.outputTokens);
      assert.equal(shared(prev, turns[k]), prev.prefix?.hashes.length);
      assert.equal(turns[k].tenant, prev.tenant);
      followUps++;
    }
  }
  assert.ok(followUps > reqs.length / 2, `${followUps} follow-ups`);
});

test('hot prefixes and documents are shared; one hot prefix draws most hot requests', () => {
  const hot = all(plan({ chat: 0, hot: 1, docs: 0, agent: 0 }));
  const roots = new Map<string, number>();
  for (const r of hot) {
    const root = r.prefix?.hashes[0] ?? '';
    roots.set(root, (roots.get(root) ?? 0) + 1);
    assert.ok(r.inputTokens > 3_000 && r.session === undefined);
  }
  assert.equal(roots.size, 4);
  assert.ok(Math.max(...roots.values()) > 0.5 * hot.length);
  const docs = all(plan({ chat: 0, hot: 0, docs: 1, agent: 0 }));
  assert.ok(docs.every((r) => r.inputTokens >= 6_000 && r.inputTokens < 21_000));
  assert.ok(new Set(docs.map((r) => r.prefix?.hashes[0])).size > 20);
  const agents = all(plan({ chat: 0, hot: 0, docs: 0, agent: 1 }));
  assert.equal(new Set(agents.map((r) => r.prefix?.hashes[374])).size, 1, 'one preamble');
  assert.ok(agents.every((r) => r.inputTokens > 6_000));
});

test('the mix is `mix` or named weights; anything else names the option', () => {
  assert.equal(formatPrefixMix(parsePrefixMix('mix')), 'chat:0.4,hot:0.2,docs:0.2,agent:0.2');
  assert.equal(
    formatPrefixMix(parsePrefixMix('chat:3,hot:1')),
    'chat:0.75,hot:0.25,docs:0,agent:0',
  );
  for (const bad of ['chat', 'chat:-1', 'lunch:1', 'chat:0,hot:0', 'chat:1:2']) {
    assert.throws(
      () => parsePrefixMix(bad),
      (e) => e instanceof ConfigError && /--prefix/.test(e.message),
    );
  }
});
