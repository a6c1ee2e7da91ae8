// A tenant's token and request quotas told on its answers, as OpenAI's rate-limit headers, read
// by the `openai` client: each answer, whole or streamed, says the tenant's tokens a window, what
// is left after its charge and when the quota is whole again; a 429 `tenant_tokens` says what
// there was; a replay under an Idempotency-Key, which takes nothing, says nothing; a tenant
// without a token limit is told none. Requests a window are told the same way.
import assert from 'node:assert/strict';
import test from 'node:test';
import { MODEL, engines, gateway, policyWith, postChat } from './gateway-kit.ts';
import { durationText } from '../../src/gateway/http/quota-headers.ts';

const WINDOW_MS = 60_000;
const LIMIT = 1_000;
const QUOTA = policyWith({
  tenants: { '*': { quotas: { window_ms: WINDOW_MS, tokens_per_window: LIMIT } } },
});
const MESSAGES = [{ role: 'user' as const, content: 'How much is left?' }];

/** The quota an answer told: its limit, what is left, and the reset in ms (or nothing told). */
function toldOf(headers: Headers, unit: 'tokens' | 'requests' = 'tokens') {
  const limit = headers.get(`x-ratelimit-limit-${unit}`);
  if (limit === null) return undefined;
  const reset = headers.get(`x-ratelimit-reset-${unit}`) ?? '';
  return {
    limit: Number(limit),
    remaining: Number(headers.get(`x-ratelimit-remaining-${unit}`)),
    resetMs: msOf(reset),
    reset,
  };
}

/** A duration as `durationText` writes it, in ms. */
function msOf(text: string): number {
  const m = /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:([\d.]+)s)?(?:(\d+)ms)?$/.exec(text);
  assert.ok(m !== null && text !== '', `a duration: ${text}`);
  const [, h = '0', min = '0', s = '0', ms = '0'] = m;
  return ((Number(h) * 60 + Number(min)) * 60 + Number(s)) * 1_000 + Number(ms);
}

test('durations are written as OpenAI writes them', () => {
  for (const [ms, text] of [
    [0, '0ms'],
    [120, '120ms'],
    [999.2, '1s'],
    [1_500, '1.5s'],
    [59_999, '59.999s'],
    [360_000, '6m0s'],
    [3_600_000, '1h0m0s'],
    [3_723_004, '1h2m3.004s'],
  ] as const) {
    assert.equal(durationText(ms), text);
    assert.equal(msOf(text), Math.ceil(ms));
  }
});

test("each answer tells its tenant's token quota as it stands; a replay and an unlimited tenant none", async () => {
  const front = await gateway(await engines(1), QUOTA);
  const asked = { model: MODEL, messages: MESSAGES, max_tokens: 100, ignore_eos: true };
  const whole = await front.client.chat.completions.create(asked).withResponse();
  const first = toldOf(whole.response.headers);
  assert.ok(first !== undefined, 'told');
  const charged = whole.data.usage?.prompt_tokens ?? 0;
  // After its charge: its prompt as estimated and its output cap.
  assert.equal(first.limit, LIMIT);
  assert.ok(first.remaining <= LIMIT - 100 && first.remaining >= LIMIT - 100 - 4 * charged);
  // Whole again once the charge refills: the window's share of what was drawn.
  const drawn = LIMIT - first.remaining;
  assert.ok(Math.abs(first.resetMs - (drawn * WINDOW_MS) / LIMIT) <= 120, first.reset);

  const { data: stream, response } = await front.client.chat.completions
    .create({ ...asked, stream: true })
    .withResponse();
  for await (const _ of stream);
  const streamed = toldOf(response.headers);
  assert.ok(streamed !== undefined && streamed.remaining < first.remaining, 'a stream too');

  // Too much for what is left: refused, told what there was.
  const refused = await postChat(front.url, { max_tokens: 900 });
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get('x-goodput-reason'), 'tenant_tokens');
  const there = toldOf(refused.headers);
  assert.ok(there !== undefined && there.remaining < 900, JSON.stringify(there));
  assert.ok(there.resetMs > (900 - there.remaining) * (WINDOW_MS / LIMIT) - 120, there.reset);

  // A replay takes nothing, and tells nothing of the quota.
  const key = { 'idempotency-key': 'quota-replay-1' };
  const once = await postChat(front.url, { max_tokens: 10 }, key);
  assert.ok(toldOf(once.headers) !== undefined);
  await once.text();
  const again = await postChat(front.url, { max_tokens: 10 }, key);
  assert.equal(again.headers.get('x-goodput-replayed'), 'true');
  assert.equal(toldOf(again.headers), undefined);

  const open = await gateway(await engines(1));
  const plain = await open.client.chat.completions.create(asked).withResponse();
  assert.equal(toldOf(plain.response.headers), undefined, 'no token limit, nothing told');
});

test("each answer tells its tenant's requests a window; the one past them is refused until one refills", async () => {
  const policy = policyWith({
    tenants: { '*': { quotas: { window_ms: WINDOW_MS, requests_per_window: 3 } } },
  });
  const front = await gateway(await engines(1), policy);
  const asked = { model: MODEL, messages: MESSAGES, max_tokens: 5 };
  const left: number[] = [];
  const once = await front.client.chat.completions.create(asked).withResponse();
  const first = toldOf(once.response.headers, 'requests');
  left.push(first?.remaining ?? -1);
  // Whole again a third of the window after the one request it took.
  assert.ok(first !== undefined && Math.abs(first.resetMs - WINDOW_MS / 3) <= 120, first?.reset);
  assert.equal(toldOf(once.response.headers), undefined, 'no token limit, no token headers');
  const { data: stream, response } = await front.client.chat.completions
    .create({ ...asked, stream: true })
    .withResponse();
  for await (const _ of stream);
  left.push(toldOf(response.headers, 'requests')?.remaining ?? -1);
  const third = await postChat(front.url, { max_tokens: 5 });
  await third.text();
  left.push(toldOf(third.headers, 'requests')?.remaining ?? -1);
  assert.deepEqual(left, [2, 1, 0]);

  const refused = await postChat(front.url, { max_tokens: 5 });
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get('x-goodput-reason'), 'tenant_requests');
  const body = (await refused.json()) as { error: { message: string } };
  assert.match(body.error.message, /requests for this window are spent/);
  // Retry-After: when one request has refilled (the first, taken a moment ago, 20 s on).
  const retryAfter = Number(refused.headers.get('retry-after'));
  assert.ok(retryAfter >= 19 && retryAfter <= 20, String(retryAfter));
  const there = toldOf(refused.headers, 'requests');
  assert.deepEqual([there?.limit, there?.remaining], [3, 0]);
});

test('a request larger than the whole window: a final 429 that tells where the quotas stand, and the sizes', async () => {
  const policy = policyWith({
    tenants: {
      '*': { quotas: { window_ms: WINDOW_MS, tokens_per_window: 300, requests_per_window: 5 } },
    },
  });
  const front = await gateway(await engines(1), policy);
  const spent = await postChat(front.url, { max_tokens: 10 });
  await spent.text();
  const left = toldOf(spent.headers)?.remaining ?? -1;

  const refused = await postChat(front.url, { max_tokens: 1_000 });
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get('x-goodput-reason'), 'tenant_tokens');
  assert.equal(refused.headers.get('x-should-retry'), 'false');
  assert.equal(refused.headers.get('retry-after'), null);
  // Where the buckets stand, as on any answer: this refusal took nothing of either.
  const tokens = toldOf(refused.headers);
  const requests = toldOf(refused.headers, 'requests');
  assert.deepEqual([tokens?.limit, requests?.limit, requests?.remaining], [300, 5, 4]);
  assert.ok(tokens !== undefined && tokens.remaining >= left && tokens.remaining < 300);
  const body = (await refused.json()) as { error: { message: string; code: string } };
  assert.equal(body.error.code, 'tenant_tokens');
  assert.match(
    body.error.message,
    /^this request needs 1,0\d\d tokens \(prompt \d+ \+ max_tokens 1000\); the tenant's whole window holds 300 \(tokens_per_window\), so no retry can succeed$/,
  );
});
