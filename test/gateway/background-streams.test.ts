// A background response asked with `stream: true`, as the official `openai` client streams and
// takes one up again: its events come from `response.created` on, its client may leave, and
// `GET /v1/responses/{id}?stream=true&starting_after=N` answers the rest, from the replica that
// runs it or, through Redis, from another, while it runs and after. Cancelled, its stream just
// ends; cut by its gateway's drain, it ends with `response.failed`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { MODEL, engines, gateway, metricValue } from './gateway-kit.ts';
import { replicasThroughRedis } from './process-kit.ts';
import { requireRedisServer, startRedis } from './redis-kit.ts';

type Event = OpenAI.Responses.ResponseStreamEvent;

/** Reads `stream` to its end, or until `stop` says to leave it. */
async function read(stream: AsyncIterable<Event>, stop = (_: Event) => false): Promise<Event[]> {
  const events: Event[] = [];
  for await (const e of stream) {
    events.push(e);
    if (stop(e)) break;
  }
  return events;
}

/** The reply's text the events carry. */
const text = (events: readonly Event[]) =>
  events.map((e) => (e.type === 'response.output_text.delta' ? e.delta : '')).join('');

/** The events' sequence numbers count on from `from`, one by one. */
function counted(events: readonly Event[], from: number): void {
  assert.deepEqual(
    events.map((e) => e.sequence_number),
    events.map((_, i) => from + i),
  );
}

const LONG = { model: MODEL, background: true, stream: true } as const;

const ESSAY = { input: 'Write a long essay.', max_output_tokens: 6_000 };

type Replica = Awaited<ReturnType<typeof replicasThroughRedis>>['a'];

/**
 * A long background stream started on `runner` and followed on `reader` after its event 3, then
 * `runner` stopped by `signal`: the reader's events count on, and end with `response.failed`
 * naming `code`. Resolves with the response's id.
 */
async function cutShort(
  runner: Replica,
  reader: Replica,
  signal: NodeJS.Signals,
  code: string,
): Promise<string> {
  const head = await read(
    await runner.client.responses.create({ ...LONG, ...ESSAY }),
    (e) => e.sequence_number === 3,
  );
  const id = head[0].type === 'response.created' ? head[0].response.id : '';
  const following = read(
    await reader.client.responses.retrieve(id, { stream: true, starting_after: 3 }),
  );
  runner.proc.child.kill(signal);
  await runner.proc.exited;
  const cut = await following;
  counted(cut, 4);
  const failed = cut.at(-1);
  assert.equal(failed?.type, 'response.failed');
  assert.equal(failed?.type === 'response.failed' && failed.response.error?.code, code as never);
  return id;
}

test('a background stream outlives its client, and is taken up again from any event', async () => {
  const front = await gateway(await engines(1));
  const stream = await front.client.responses.create({
    ...LONG,
    input: 'Tell me a long story.',
    max_output_tokens: 400,
  });
  // The client leaves after a few deltas; the response runs on.
  const head = await read(stream, (e) => e.sequence_number === 12);
  counted(head, 0);
  const created = head[0];
  assert.equal(created.type, 'response.created');
  const id = created.type === 'response.created' ? created.response.id : '';
  assert.equal(created.type === 'response.created' && created.response.background, true);
  assert.ok(['response.queued', 'response.in_progress'].includes(head[1].type), head[1].type);
  const rest = await read(
    await front.client.responses.retrieve(id, { stream: true, starting_after: 12 }),
  );
  counted(rest, 13);
  const last = rest.at(-1);
  assert.ok(last?.type === 'response.completed' || last?.type === 'response.incomplete');
  const whole = await front.client.responses.retrieve(id);
  assert.equal(whole.status, last.response.status, 'kept as it ended, before its last event went');
  // The client adds `output_text` to what it retrieves.
  const { output_text: _, ...kept } = whole;
  assert.deepEqual(kept, last.response);
  assert.ok((whole.usage?.output_tokens ?? 0) > 12);
  assert.equal(text([...head, ...rest]), whole.output_text);
  // Ended, it is told again whole, the same events.
  const again = await read(await front.client.responses.retrieve(id, { stream: true }));
  assert.deepEqual(again, [...head, ...rest]);
  const past = await read(
    await front.client.responses.retrieve(id, { stream: true, starting_after: 10_000 }),
  );
  assert.deepEqual(past, [], 'nothing after its end');
  const ran = { status: whole.status ?? '' };
  assert.equal(await metricValue(front.url, 'goodput_background_responses_total', ran), 1);
});

test('a background stream cancelled ends with no more events; what cannot stream is a 400 naming why', async () => {
  const front = await gateway(await engines(1));
  const stream = await front.client.responses.create({
    ...LONG,
    input: 'Write a long essay.',
    max_output_tokens: 6_000,
  });
  const events: Event[] = [];
  let id = '';
  for await (const e of stream) {
    events.push(e);
    if (e.type === 'response.created') id = e.response.id;
    if (e.type === 'response.output_text.delta' && events.length === 20) {
      assert.equal((await front.client.responses.cancel(id)).status, 'cancelled');
    }
  }
  counted(events, 0);
  const types = new Set(events.map((e) => e.type));
  for (const end of ['response.completed', 'response.incomplete', 'response.failed'] as const)
    assert.ok(!types.has(end), end);
  assert.equal((await front.client.responses.retrieve(id)).status, 'cancelled');
  // Asked wrongly: the field, and why.
  const polled = await front.client.responses.create({
    model: MODEL,
    input: 'Hi',
    background: true,
    max_output_tokens: 2,
  });
  const cases: [string, number, string, RegExp][] = [
    [`${id}?stream=true&starting_after=-1`, 400, 'starting_after', /expected an integer >= 0/],
    [`${id}?stream=true&starting_after=1.5`, 400, 'starting_after', /got "1.5"/],
    [`${id}?stream=maybe`, 400, 'stream', /expected true or false, got "maybe"/],
    [`${polled.id}?stream=true`, 400, 'stream', /not created with background and stream true/],
    ['resp_none?stream=true', 404, 'response_id', /no response "resp_none"/],
  ];
  for (const [path, status, param, message] of cases) {
    const res = await fetch(`${front.url}/v1/responses/${path}`);
    const body = (await res.json()) as { error: { param: string; message: string } };
    assert.equal(res.status, status, path);
    assert.equal(body.error.param, param, path);
    assert.match(body.error.message, message, path);
  }
});

test('a background stream retried under its Idempotency-Key is followed from its first event', async () => {
  const front = await gateway(await engines(1));
  const post = () =>
    front.client.responses.create(
      { ...LONG, input: 'Tell me a long story.', max_output_tokens: 300 },
      { headers: { 'idempotency-key': 'story-7' } },
    );
  // The client loses its stream after three events, then sends the request again.
  const first = await read(await post(), (e) => e.sequence_number === 2);
  const { data: stream, response } = await post().withResponse();
  assert.equal(response.headers.get('x-goodput-replayed'), 'true');
  const again = await read(stream);
  counted(again, 0);
  assert.deepEqual(again.slice(0, 3), first, 'the same stream, from its first event');
  assert.ok(['response.completed', 'response.incomplete'].includes(again.at(-1)?.type ?? ''));
  // Ended, a retry is told it whole again; only one response ran.
  assert.deepEqual(await read(await post()), again);
  const ran = await metricValue(front.url, 'goodput_background_responses_total');
  assert.equal(ran, 1);
});

test('two gateways through Redis: a stream run on one is taken up on the other; a drain ends it failed', async () => {
  requireRedisServer();
  const redis = await startRedis();
  const { a, b, close } = await replicasThroughRedis(redis.url);
  const ask = { ...LONG, input: 'Tell me a long story.', max_output_tokens: 300 };
  const head = await read(await a.client.responses.create(ask), (e) => e.sequence_number === 5);
  const id = head[0].type === 'response.created' ? head[0].response.id : '';
  // B reads A's log as A writes it, from where the client left.
  const rest = await read(
    await b.client.responses.retrieve(id, { stream: true, starting_after: 5 }),
  );
  counted(rest, 6);
  assert.ok(['response.completed', 'response.incomplete'].includes(rest.at(-1)?.type ?? ''));
  assert.equal(text([...head, ...rest]), (await b.client.responses.retrieve(id)).output_text);
  // A drain cuts what B runs: a reader on A gets its end, `response.failed`.
  const idB = await cutShort(b, a, 'SIGTERM', 'shutting_down');
  assert.equal((await a.client.responses.retrieve(idB)).status, 'failed');
  await close();
  await redis.kill();
});

test('two gateways through Redis: what a killed one ran is kept failed, runner_lost, when read on the other', async () => {
  requireRedisServer();
  const redis = await startRedis();
  const { a, b } = await replicasThroughRedis(redis.url);
  const polled = await a.client.responses.create({ ...LONG, ...ESSAY, stream: false });
  // Its stream's reader on B gets the end it would have had.
  const id = await cutShort(a, b, 'SIGKILL', 'runner_lost');
  // A poll, and a turn after it, find it failed too.
  const lost = await b.client.responses.retrieve(polled.id);
  assert.equal(lost.status, 'failed');
  assert.equal(lost.error?.code, 'runner_lost' as never);
  await assert.rejects(
    b.client.responses.create({ model: MODEL, input: 'More.', previous_response_id: id }),
    (e: unknown) => e instanceof OpenAI.BadRequestError && /failed; continue from/.test(e.message),
  );
  assert.ok((await metricValue(b.url, 'goodput_background_responses_lost_total')) >= 2);
  b.proc.child.kill('SIGTERM');
  await b.proc.exited;
  await redis.kill();
});
