// The Responses API's background mode, as the official `openai` client uses it: a request with
// `background: true` is answered at once, queued or in progress, once admission has admitted
// it, and its client polls it to its end; cancelled, it stops where it is, upstream included.
// Refused at the door, it is answered as any request is and nothing is kept. Two gateway
// processes share a real Redis: a cancel at one stops the response the other runs, and a
// gateway's drain cut short leaves the responses it ran failed, never queued for good.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { MODEL, decisionRecord, engines, gateway, metricValue, until } from './gateway-kit.ts';
import { replicasThroughRedis } from './process-kit.ts';
import { presetPolicy } from '../../src/core/config/presets.ts';
import { requireRedisServer, startRedis } from './redis-kit.ts';

const ADMIN = 'background-admin';

type Client = OpenAI;

/** Polls response `id` until `done` says it is what was awaited; resolves with it. */
async function polled(
  client: Client,
  id: string,
  done: (r: OpenAI.Responses.Response) => boolean,
): Promise<OpenAI.Responses.Response> {
  let last: OpenAI.Responses.Response | undefined;
  await until(async () => {
    last = await client.responses.retrieve(id);
    return done(last);
  }, 600);
  return last as OpenAI.Responses.Response;
}

const ended = (r: OpenAI.Responses.Response) => !['queued', 'in_progress'].includes(r.status ?? '');

test('a background response is answered at once, runs apart from its request and is polled to its end', async () => {
  const front = await gateway(await engines(1), 'goodput', { adminToken: ADMIN });
  const { data: created, response } = await front.client.responses
    .create({ model: MODEL, input: 'Tell me a story.', background: true, max_output_tokens: 48 })
    .withResponse();
  assert.equal(response.status, 200);
  assert.equal(created.background, true);
  assert.ok(['queued', 'in_progress'].includes(created.status ?? ''), created.status);
  assert.deepEqual(created.output, []);
  assert.equal(created.usage, null);
  const done = await polled(front.client, created.id, ended);
  assert.equal(done.status, 'incomplete', 'cut at its max_output_tokens');
  assert.equal(done.background, true);
  assert.equal(done.created_at, created.created_at);
  assert.equal(done.usage?.output_tokens, 48);
  assert.ok(done.output_text.length > 0);
  const ran = (status: string) =>
    metricValue(front.url, 'goodput_background_responses_total', { status });
  assert.equal(await ran('incomplete'), 1);
  assert.equal(await metricValue(front.url, 'goodput_background_responses_running'), 0);
  // Findable by its id, as any request.
  const id = response.headers.get('x-goodput-request-id') ?? '';
  const record = await decisionRecord<{ admission: { result: string } }>(front.url, id, ADMIN);
  assert.equal(record.admission.result, 'admit');
  // Its conversation goes on from it, as from any kept response.
  const next = await front.client.responses.create({
    model: MODEL,
    input: 'And then?',
    previous_response_id: done.id,
    max_output_tokens: 4,
  });
  assert.equal(next.status, 'incomplete');
});

test('flex requests in the background, more than the fleet seats, are queued at once as batch and each run to its end', async () => {
  const small = { profile: 'const:step_ms=10', maxNumSeqs: 2 };
  const tiered = { ...presetPolicy('goodput'), serviceTiers: { flex: 'batch' as const } };
  const front = await gateway(await engines(1, small), tiered, {
    engine: small,
    adminToken: ADMIN,
  });
  const created = await Promise.all(
    Array.from({ length: 8 }, async (_, i) => {
      const { data, response } = await front.client.responses
        .create({
          model: MODEL,
          input: `Summarise report ${i}.`,
          background: true,
          service_tier: 'flex',
          max_output_tokens: 30,
        })
        .withResponse();
      return { data, id: response.headers.get('x-goodput-request-id') ?? '' };
    }),
  );
  const statuses = created.map((c) => c.data.status);
  assert.ok(statuses.includes('queued'), `some wait for a seat: ${statuses.join(', ')}`);
  for (const { data, id } of created) {
    const done = await polled(front.client, data.id, ended);
    assert.equal(done.status, 'incomplete', data.id);
    assert.equal(done.usage?.output_tokens, 30);
    assert.equal(done.service_tier, 'flex');
    const record = await decisionRecord<{ class: string }>(front.url, id, ADMIN);
    assert.equal(record.class, 'batch');
  }
});

test('background responses that wait in the queue longer than the response TTL are kept to their end', async () => {
  // One seat, 40 ms a token: the third of three waits 2.4 s, past a TTL of 1 s.
  const slow = { profile: 'const:step_ms=40', maxNumSeqs: 1 };
  const front = await gateway(await engines(1, slow), 'goodput', {
    engine: slow,
    keptResponses: { ttlMs: 1_000 },
  });
  const created = await Promise.all(
    [0, 1, 2].map((i) =>
      front.client.responses.create(
        { model: MODEL, input: `Report ${i}.`, background: true, max_output_tokens: 30 },
        { headers: { 'x-goodput-class': 'batch' } },
      ),
    ),
  );
  assert.ok(created.some((c) => c.status === 'queued'));
  for (const c of created) {
    const done = await polled(front.client, c.id, ended);
    assert.equal(done.status, 'incomplete', c.id);
    assert.equal(done.usage?.output_tokens, 30);
  }
  const ran = { status: 'incomplete' };
  assert.equal(await metricValue(front.url, 'goodput_background_responses_total', ran), 3);
});

test('a background response cancelled while it runs stops upstream and is kept cancelled', async () => {
  const front = await gateway(await engines(1), 'goodput', { adminToken: ADMIN });
  const created = await front.client.responses.create({
    model: MODEL,
    input: 'Write a long essay.',
    background: true,
    max_output_tokens: 6_000,
  });
  await polled(front.client, created.id, (r) => r.status === 'in_progress');
  // A turn cannot follow it yet.
  await assert.rejects(
    front.client.responses.create({
      model: MODEL,
      input: 'More.',
      previous_response_id: created.id,
    }),
    (e: unknown) =>
      e instanceof OpenAI.BadRequestError && /is still in progress \(background\)/.test(e.message),
  );
  const cancelled = await front.client.responses.cancel(created.id);
  assert.equal(cancelled.status, 'cancelled');
  await until(
    async () =>
      (await metricValue(front.url, 'goodput_cancels_total', { stage: 'streaming' })) >= 1,
  );
  await new Promise((r) => setTimeout(r, 200));
  const after = await front.client.responses.retrieve(created.id);
  assert.equal(after.status, 'cancelled');
  assert.equal(after.error, null);
  const ran = { status: 'cancelled' };
  assert.equal(await metricValue(front.url, 'goodput_background_responses_total', ran), 1);
  // Cancelled twice: as it stands. A response not run in the background is no cancel's.
  assert.equal((await front.client.responses.cancel(created.id)).status, 'cancelled');
  const plain = await front.client.responses.create({
    model: MODEL,
    input: 'Hi',
    max_output_tokens: 2,
  });
  await assert.rejects(
    front.client.responses.cancel(plain.id),
    (e: unknown) =>
      e instanceof OpenAI.BadRequestError && /is not a background response/.test(e.message),
  );
});

test('a background request retried under its Idempotency-Key is answered as it was, while it runs', async () => {
  const front = await gateway(await engines(1), 'goodput', { adminToken: ADMIN });
  const send = () =>
    fetch(`${front.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'nightly-report-7' },
      body: JSON.stringify({
        model: MODEL,
        input: 'Write a long essay.',
        background: true,
        max_output_tokens: 6_000,
      }),
    });
  const first = await send();
  const created = (await first.json()) as { id: string };
  const again = await send();
  assert.equal(again.status, 200);
  assert.equal(again.headers.get('x-goodput-replayed'), 'true');
  assert.equal(((await again.json()) as { id: string }).id, created.id);
  assert.equal(await metricValue(front.url, 'goodput_background_responses_running'), 1);
  await front.client.responses.cancel(created.id);
});

test('a background request refused at the door is answered as any request, and nothing is kept', async () => {
  const front = await gateway(await engines(1), 'goodput', { adminToken: ADMIN });
  const res = await fetch(`${front.url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goodput-timeout-ms': '1' },
    body: JSON.stringify({ model: MODEL, input: 'Hi', background: true }),
  });
  assert.ok([503, 504].includes(res.status), String(res.status));
  await res.text();
  const id = res.headers.get('x-goodput-request-id') ?? '';
  assert.notEqual(id, '');
  const kept = await fetch(`${front.url}/v1/responses/resp_${id}`);
  assert.equal(kept.status, 404);
  await kept.text();
  // Asked wrongly: a 400 naming the field.
  const cases: [object, RegExp][] = [
    [{ store: false }, /background: expected false or absent with store false/],
  ];
  for (const [extra, message] of cases) {
    await assert.rejects(
      front.client.responses.create({
        model: MODEL,
        input: 'Hi',
        background: true,
        ...extra,
      } as OpenAI.Responses.ResponseCreateParamsNonStreaming),
      (e: unknown) =>
        e instanceof OpenAI.BadRequestError && e.param === 'background' && message.test(e.message),
      JSON.stringify(extra),
    );
  }
  const keepsNone = await gateway(await engines(1), 'goodput', { keptResponses: { ttlMs: 0 } });
  await assert.rejects(
    keepsNone.client.responses.create({ model: MODEL, input: 'Hi', background: true }),
    (e: unknown) =>
      e instanceof OpenAI.BadRequestError &&
      e.param === 'background' &&
      /stores no responses to poll/.test(e.message),
  );
});

test('two gateways through Redis: a cancel at one stops what the other runs; a drain cut short leaves it failed', async () => {
  requireRedisServer();
  const redis = await startRedis();
  const { a, b, close } = await replicasThroughRedis(redis.url);
  const long = {
    model: MODEL,
    input: 'Write a long essay.',
    background: true,
    max_output_tokens: 6_000,
  };
  const onA = await a.client.responses.create(long);
  await polled(b.client, onA.id, (r) => r.status === 'in_progress');
  assert.equal((await b.client.responses.cancel(onA.id)).status, 'cancelled');
  // A reads the mark within its sweep and stops the stream; the mark is never written over.
  await until(
    async () => (await metricValue(a.url, 'goodput_cancels_total', { stage: 'streaming' })) >= 1,
    1_000,
  );
  await new Promise((r) => setTimeout(r, 300));
  assert.equal((await a.client.responses.retrieve(onA.id)).status, 'cancelled');
  // One that ends at A before A reads the mark is counted as its record ended: cancelled.
  const short = await a.client.responses.create({ ...long, max_output_tokens: 120 });
  await polled(b.client, short.id, (r) => r.status === 'in_progress');
  assert.equal((await b.client.responses.cancel(short.id)).status, 'cancelled');
  await until(async () => (await metricValue(a.url, 'goodput_background_responses_running')) === 0);
  const endedAt = (status: string) =>
    metricValue(a.url, 'goodput_background_responses_total', { status });
  assert.deepEqual(
    [await endedAt('cancelled'), await endedAt('incomplete')],
    [2, 0],
    'counted as the client was told',
  );
  assert.equal((await a.client.responses.retrieve(short.id)).status, 'cancelled');
  // B drains with a response in flight: cut at its drain time, kept as failed.
  const onB = await b.client.responses.create(long);
  await polled(a.client, onB.id, (r) => r.status === 'in_progress');
  b.proc.child.kill('SIGTERM');
  await b.proc.exited;
  const failed = await a.client.responses.retrieve(onB.id);
  assert.equal(failed.status, 'failed');
  assert.equal(failed.error?.code, 'shutting_down' as never);
  await close();
  await redis.kill();
});
