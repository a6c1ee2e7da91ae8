// The shared state at the HTTP door, in one gateway (in-memory store): a tenant's concurrency
// slot is given back however its request ends — answered, streamed to the end, abandoned
// mid-stream, refused later by the pipeline — a second request while it is held gets 429
// `tenant_concurrency`, an Idempotency-Key in flight gets 409, declared retries run out (the
// SDKs' own do not), and a token charge is settled to what the request used.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sha256 } from '../../src/gateway/api-keys.ts';
import { engines, gateway, metricValue, policyWith, postChat, until } from './gateway-kit.ts';

const hex = (k: string) => sha256(k).toString('hex');
const backends = await engines(1);
const gw = await gateway(
  backends,
  policyWith({
    tenants: {
      solo: {
        api_keys_sha256: [hex('sk-solo')],
        classes: ['interactive', 'batch'],
        quotas: { max_concurrent_requests: 1 },
      },
      retrier: { api_keys_sha256: [hex('sk-retrier')] },
      sdk: { api_keys_sha256: [hex('sk-sdk')] },
      // A long window: the bucket refills ~1.4 tokens a second.
      metered: {
        api_keys_sha256: [hex('sk-metered')],
        quotas: { window_ms: 3_600_000, tokens_per_window: 5_000 },
      },
    },
  }),
);

function post(
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
) {
  return postChat(gw.url, body, { authorization: 'Bearer sk-solo', ...headers }, signal);
}

/** The slot is free: a request gets in (polled, since a cancelled stream ends asynchronously). */
async function slotIsFree(): Promise<void> {
  await until(async () => {
    const res = await post({ max_tokens: 2 });
    await res.text();
    return res.status === 200;
  });
}

test('an answered request gives its slot back', async () => {
  const res = await post({ max_tokens: 3 });
  assert.equal(res.status, 200);
  await res.text();
  await slotIsFree();
});

test('while a stream holds the slot, the next request gets 429 tenant_concurrency', async () => {
  const streaming = await post({ max_tokens: 50, ignore_eos: true, stream: true });
  assert.equal(streaming.status, 200);
  const refused = await post({ max_tokens: 3 });
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get('x-goodput-reason'), 'tenant_concurrency');
  assert.ok(Number(refused.headers.get('retry-after')) >= 1);
  await refused.text();
  assert.match(await streaming.text(), /\[DONE\]/);
  await slotIsFree();
});

test('a stream the client abandons gives its slot back', async () => {
  const abort = new AbortController();
  const res = await post({ max_tokens: 200, ignore_eos: true, stream: true }, {}, abort.signal);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  await reader.read();
  abort.abort();
  await reader.read().catch(() => {});
  await slotIsFree();
});

test('a request the pipeline refuses after the door gives its slot back', async () => {
  const res = await post({ max_tokens: 3 }, { 'x-goodput-class': 'reasoning' });
  assert.equal(res.status, 403);
  await res.text();
  await slotIsFree();
});

test('an Idempotency-Key: 409 in flight, 422 for another request, the stream replayed once done', async () => {
  const key = { 'idempotency-key': 'dup-1' };
  const body = { max_tokens: 50, ignore_eos: true, stream: true };
  const first = await post(body, key);
  assert.equal(first.status, 200);
  const second = await post(body, key);
  assert.equal(second.status, 409, 'the key is checked before the quota');
  assert.equal(second.headers.get('x-goodput-reason'), 'duplicate');
  await second.text();
  const other = await post({ max_tokens: 3 }, key);
  assert.equal(other.status, 422, 'the same key for a different request');
  assert.equal(other.headers.get('x-goodput-reason'), 'idempotency_key_reused');
  assert.match(await other.text(), /different request/);
  const streamed = await first.text();
  assert.match(streamed, /\[DONE\]\n\n$/);
  let replay: Response | undefined;
  await until(async () => {
    replay = await post(body, key);
    if (replay.status !== 200) await replay.text();
    return replay.status === 200;
  });
  assert.equal(replay?.headers.get('x-goodput-replayed'), 'true');
  assert.equal(replay?.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  assert.equal(await replay?.text(), streamed, 'the very answer, in the mode it was asked');
  const notStreamed = await post({ ...body, stream: false }, key);
  assert.equal(notStreamed.status, 422, 'a whole answer is not a replay of a stream');
  await notStreamed.text();
});

test('retries draw on the retry budget until it is spent: 429 retry_budget', async () => {
  let last: Response | undefined;
  for (let i = 0; i < 30; i++) {
    last = await post(
      { max_tokens: 1 },
      { authorization: 'Bearer sk-retrier', 'x-goodput-attempt': '2' },
    );
    await last.text();
    if (last.status === 429) break;
  }
  assert.equal(last?.status, 429);
  assert.equal(last.headers.get('x-goodput-reason'), 'retry_budget');
  assert.ok(Number(last.headers.get('retry-after')) >= 1);
});

test("the SDKs' own retries are counted, not charged: they come after the Retry-After they were told", async () => {
  const before = await metricValue(gw.url, 'goodput_retries_total');
  for (let i = 0; i < 30; i++) {
    const sdkRetry = await post(
      { max_tokens: 1 },
      { authorization: 'Bearer sk-sdk', 'x-stainless-retry-count': '1' },
    );
    await sdkRetry.text();
    assert.equal(sdkRetry.status, 200, `the ${i + 1}th SDK retry`);
  }
  assert.equal(await metricValue(gw.url, 'goodput_retries_total'), before + 30);
});

test('a token charge is settled to what the request used: what it did not use is spent again', async () => {
  const metered = { authorization: 'Bearer sk-metered' };
  // Charged prompt + 4,000 at the door; the engine stops at its natural length, far sooner.
  const first = await post({ max_tokens: 4_000 }, metered);
  assert.equal(first.status, 200);
  const { usage } = (await first.json()) as {
    usage: { prompt_tokens: number; completion_tokens: number };
  };
  const used = usage.prompt_tokens + usage.completion_tokens;
  assert.ok(usage.completion_tokens < 3_000, `natural stop: ${usage.completion_tokens}`);
  // Fits only if the first request was settled to `used` (the same prompt, counted alike by
  // the gateway and the engine); charged at its estimate, the bucket would hold < 1,000.
  const fits = { max_tokens: 5_000 - used - usage.prompt_tokens - 20, stream: true };
  const stop = new AbortController();
  const second = await post(fits, metered, stop.signal);
  assert.equal(second.status, 200, second.headers.get('x-goodput-reason') ?? '');
  // And the quota does bind at that size: with the second charged, a third is refused.
  const third = await post(fits, metered);
  assert.equal(third.status, 429);
  assert.equal(third.headers.get('x-goodput-reason'), 'tenant_tokens');
  await third.text();
  stop.abort();
  await until(async () => (await metricValue(backends[0].url, 'vllm:num_requests_running')) === 0);
});
