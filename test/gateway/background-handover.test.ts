// A gateway replica that drains hands the background responses still queued there to a replica
// that serves, through a real Redis: the other runs each to its end under the same id, its
// stream numbered on from where it stopped, and its clients poll or follow it there; refused
// there, each is kept failed with the refusal. A client following it on the replica that
// drains is told where it got to, to take it up again elsewhere. Killed, or its handover refused
// by Redis, what it held queued is handed over by the replica that finds it gone. Two real
// `goodput serve` processes in front of one engine with two seats, so most of a burst waits.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { createClient } from 'redis';
import { MODEL, metricValue } from './gateway-kit.ts';
import { startEngine, startServe, until } from './process-kit.ts';
import { requireRedisServer, startRedis, type RedisUnderTest } from './redis-kit.ts';

type Event = OpenAI.Responses.ResponseStreamEvent;
type Response = OpenAI.Responses.Response;
type Served = Awaited<ReturnType<typeof startServe>>;

const SMALL = ['--profile', 'const:step_ms=10', '--max-num-seqs', '2'];

const dir = mkdtempSync(join(tmpdir(), 'goodput-handover-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const ended = (r: Response) => !['queued', 'in_progress'].includes(r.status ?? '');

const ASK = { model: MODEL, background: true, max_output_tokens: 300 } as const;
const BATCH = { headers: { 'x-goodput-class': 'batch' } };

/**
 * Replicas A and B (each with its args too) through a fresh Redis, in front of an engine with
 * two seats, and six background responses asked of A: two run, the rest wait in A's queue.
 */
async function queuedOnA(aArgs: readonly string[] = [], bArgs: readonly string[] = []) {
  requireRedisServer();
  const redis = await startRedis();
  const engine = await startEngine(SMALL);
  const args = ['--backend', engine, '--redis', redis.url, '--gateway-replicas', '2', ...SMALL];
  const a = await startServe([...args, ...aArgs]);
  const b = await startServe([...args, ...bArgs]);
  const client = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none' });
  const [onA, onB] = [client(a.url), client(b.url)];
  const asked: Response[] = [];
  for (let i = 0; i < 6; i++)
    asked.push(await onA.responses.create({ ...ASK, input: `Essay ${i}` }, BATCH));
  const queued = asked.filter((r) => r.status === 'queued');
  assert.ok(queued.length >= 3, asked.map((r) => r.status).join(', '));
  return { redis, a, b, onA, onB, asked, queued };
}

/**
 * Replicas A and B through a fresh Redis (B with `bArgs` too); six background responses asked
 * of A and a seventh streamed, read to its `response.queued` and followed on B from there; then
 * A drained. Resolves once A has exited, with what B's clients and A's decision log tell.
 */
async function drainedWithQueue(bArgs: readonly string[] = []) {
  const decisions = join(dir, `${Math.random()}.jsonl`);
  const {
    redis,
    a,
    b,
    onA,
    onB,
    asked: polled,
    queued,
  } = await queuedOnA(['--decisions', decisions], bArgs);
  const head: Event[] = [];
  const story = { ...ASK, input: 'Story', stream: true } as const;
  for await (const e of await onA.responses.create(story, BATCH)) {
    head.push(e);
    if (e.type === 'response.queued') break;
  }
  assert.deepEqual(
    head.map((e) => e.type),
    ['response.created', 'response.queued'],
  );
  const streamed = head[0].type === 'response.created' ? head[0].response : undefined;
  assert.ok(streamed !== undefined);
  // Followed on B from its second event, before and after A hands it over.
  const following = (async () => {
    const events: Event[] = [];
    const opts = { stream: true, starting_after: 1 } as const;
    for await (const e of await onB.responses.retrieve(streamed.id, opts)) events.push(e);
    return events;
  })();

  // A long one run on B, followed on A, which shuts down: A's reader says where its client got
  // to, to go on elsewhere.
  const long = { model: MODEL, background: true, stream: true, max_output_tokens: 2_000 } as const;
  let longId = '';
  for await (const e of await onB.responses.create({ ...long, input: 'A long tale' })) {
    if (e.type === 'response.created') longId = e.response.id;
    break;
  }
  const onAToo = (async () => {
    const events: Event[] = [];
    try {
      const opts = { stream: true, starting_after: 0 } as const;
      for await (const e of await onA.responses.retrieve(longId, opts)) events.push(e);
    } catch (e) {
      return { events, error: e as InstanceType<typeof OpenAI.APIError> };
    }
    return { events, error: undefined };
  })();
  a.proc.child.kill('SIGTERM');
  assert.deepEqual(await a.proc.exited, { code: 0, signal: null });
  const cut = await onAToo;
  assert.equal(cut.error?.code, 'shutting_down', String(cut.error));
  const at = (cut.error?.error as { sequence_number?: number } | undefined)?.sequence_number;
  assert.equal(at, 1 + cut.events.length, 'the sequence number its client got to');
  await onB.responses.cancel(longId);
  const drained = a.proc.jsonLines().find((l) => l.msg === 'drained');
  const handed = Number(drained?.handed_over);
  assert.ok(handed >= queued.length + 1, JSON.stringify(drained));
  // A's decision log says where each went, under its request id.
  const records = readFileSync(decisions, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { request_id: string; admission?: Record<string, unknown> });
  const handedOver = records.filter(
    (r) => r.admission?.reason === 'handed_over' && r.admission.result === 'abort',
  );
  assert.equal(handedOver.length, handed);
  for (const { id } of [...queued, streamed])
    assert.ok(
      handedOver.some((r) => `resp_${r.request_id}` === id),
      id,
    );

  /** Each response asked, as B tells it once it has ended. */
  const endings = async () => {
    const out: Response[] = [];
    for (const { id } of [...polled, streamed]) {
      let last: Response | undefined;
      const end = async () => ended((last = await onB.responses.retrieve(id)));
      await until(`${id} ended`, end, 30_000, 50);
      out.push(last as Response);
    }
    return out;
  };
  const done = async () => {
    b.proc.child.kill('SIGTERM');
    await b.proc.exited;
    await redis.kill();
  };
  return { b, handed, polled, queued, streamed, following, endings, done };
}

test('a replica that drains hands its queued background responses over: they run to their end on another', async () => {
  const { b, handed, polled, streamed, following, endings, done } = await drainedWithQueue();
  // Every one ends on B as it would have on A: none failed, none queued for good.
  const ends = await endings();
  for (const [i, r] of ends.entries()) {
    assert.ok(['completed', 'incomplete'].includes(r.status ?? ''), `${r.id}: ${r.status}`);
    assert.equal(r.created_at, [...polled, streamed][i].created_at, 'the same response');
    assert.ok((r.usage?.output_tokens ?? 0) > 0);
  }
  const rest = await following;
  assert.deepEqual(
    rest.map((e) => e.sequence_number),
    rest.map((_, i) => 2 + i),
    'numbered on from where A stopped',
  );
  assert.equal(rest[0]?.type, 'response.in_progress');
  const last = rest.at(-1);
  assert.ok(last?.type === 'response.completed' || last?.type === 'response.incomplete');
  assert.equal(last.response.id, streamed.id);
  const op = (o: string) => metricValue(b.url, 'goodput_background_handovers_total', { op: o });
  assert.equal(await op('adopted'), handed, 'B ran each A handed over');
  // Counted where they were asked: B was asked one, its long tale.
  const asked = { endpoint: 'responses' };
  assert.equal(await metricValue(b.url, 'goodput_api_requests_total', asked), 1);
  assert.equal(
    await metricValue(b.url, 'goodput_api_answers_total', { ...asked, status: '200' }),
    1,
  );
  await done();
});

test('a response handed over that the replica taking it refuses is kept failed with the refusal', async () => {
  // B grants the default tenant interactive requests alone: a batch request is a 403 there.
  const policy = join(dir, 'interactive-only.json');
  const doc = {
    name: 'b',
    policy_revision: 'b@1',
    admission: { type: 'goodput' },
    dispatch: { type: 'flow-control' },
    routing: { type: 'least-request' },
    tenants: { default: { classes: ['interactive'] } },
  };
  writeFileSync(policy, JSON.stringify(doc));
  const { b, handed, queued, streamed, following, endings, done } = await drainedWithQueue([
    '--policy',
    policy,
  ]);
  const ends = await endings();
  for (const r of ends) {
    if (![...queued, streamed].some((q) => q.id === r.id)) continue;
    assert.equal(r.status, 'failed', r.id);
    assert.equal(r.error?.code, 'class_not_granted' as never, r.id);
  }
  const rest = await following;
  assert.deepEqual(
    rest.map((e) => [e.type, e.sequence_number]),
    [['response.failed', 2]],
  );
  const op = (o: string) => metricValue(b.url, 'goodput_background_handovers_total', { op: o });
  assert.equal(await op('refused'), handed);
  await done();
});

/** B reclaimed and ran `n` responses of a replica gone; then B and Redis are stopped. */
async function reclaimedOnB(b: Served, redis: RedisUnderTest, n: number) {
  const op = (o: string) => metricValue(b.url, 'goodput_background_handovers_total', { op: o });
  assert.equal(await op('reclaimed'), n);
  assert.equal(await op('adopted'), n);
  b.proc.child.kill('SIGTERM');
  await b.proc.exited;
  await redis.kill();
}

test('a replica killed with background responses queued: the replica that finds it gone hands them over', async () => {
  const { redis, a, b, onB, asked, queued } = await queuedOnA();
  // Still queued on A when it dies; what A had upstream then is lost with it.
  await new Promise((r) => setTimeout(r, 300));
  const stillQueued = new Set<string>();
  for (const { id } of queued)
    if ((await onB.responses.retrieve(id)).status === 'queued') stillQueued.add(id);
  a.proc.child.kill('SIGKILL');
  await a.proc.exited;
  for (const { id } of asked) {
    let last: Response | undefined;
    const end = async () => ended((last = await onB.responses.retrieve(id)));
    await until(`${id} ended`, end, 45_000, 200);
    if (stillQueued.has(id))
      assert.ok(['completed', 'incomplete'].includes(last?.status ?? ''), `${id}: ${last?.status}`);
    else assert.equal(last?.error?.code, 'runner_lost' as never, `${id}: ${last?.status}`);
  }
  await reclaimedOnB(b, redis, stillQueued.size);
});

test('a drain whose handover Redis refuses leaves them queued: the replica that finds it gone hands them over', async () => {
  const { redis, a, b, onB, asked } = await queuedOnA();
  // Redis takes no RPUSH, the handover's write, from A's drain until A has gone.
  const admin = createClient({ url: redis.url });
  await admin.connect();
  await admin.sendCommand(['ACL', 'SETUSER', 'default', '-rpush']);
  a.proc.child.kill('SIGTERM');
  assert.deepEqual(await a.proc.exited, { code: 0, signal: null });
  const drained = a.proc.jsonLines().find((l) => l.msg === 'drained');
  const stopped = Number(drained?.handed_over);
  // Those A ran upstream ended there; those it could not hand over wait, queued, not failed.
  const waiting = new Set<string>();
  for (const { id } of asked) {
    const r = await onB.responses.retrieve(id);
    if (r.status === 'queued') waiting.add(id);
    else assert.ok(['completed', 'incomplete'].includes(r.status ?? ''), `${id}: ${r.status}`);
  }
  assert.ok(stopped >= 3 && waiting.size === stopped, `${stopped} stopped, ${waiting.size} queued`);
  await admin.sendCommand(['ACL', 'SETUSER', 'default', '+rpush']);
  await admin.quit();
  for (const id of waiting) {
    let last: Response | undefined;
    const end = async () => ended((last = await onB.responses.retrieve(id)));
    await until(`${id} ended`, end, 45_000, 200);
    assert.ok(['completed', 'incomplete'].includes(last?.status ?? ''), `${id}: ${last?.status}`);
  }
  await reclaimedOnB(b, redis, waiting.size);
});
