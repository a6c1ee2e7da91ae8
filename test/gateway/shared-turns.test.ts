// Kept turns across two gateways on the same engines, behind a "load balancer" that sends every
// retry to the other gateway: the worst case for a turn kept where it was told. With a shared
// Redis the retry finds its turn there and is decided as its holder, and the gateway that kept
// the turn hears it claimed; with each gateway's state its own, the retry is judged as a new
// request and the turn it left runs out. Real HTTP, real engines, a real redis-server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from 'redis';
import { engines, gateway, metricValue, policyWith, postChat, until } from './gateway-kit.ts';
import { startServe } from './process-kit.ts';
import { startRedis } from './redis-kit.ts';

const slow = { profile: 'const:step_ms=10', maxNumSeqs: 4 };
const redis = await startRedis();

interface Keyed {
  /** The gateway its first attempt went to (0 or 1). */
  readonly first: number;
  readonly kept: boolean;
  readonly retry: number;
  readonly keptAgain: boolean;
}

/**
 * Three times what two slow engines serve, for 5 s, of requests without a key, spread over both
 * gateways; meanwhile 40 keyed clients, their first attempts alternating between the gateways,
 * each retrying once at the other, exactly when its refusal says.
 */
async function overload(shared: boolean, tag: string) {
  const backends = await engines(2, slow);
  const policy = policyWith({ admission: { type: 'goodput' } });
  const store = shared ? { redisUrl: redis.url, failure: 'open' as const, replicas: 2 } : undefined;
  const gws = [
    await gateway(backends, policy, { engine: slow, shared: store }),
    await gateway(backends, policy, { engine: slow, shared: store }),
  ];
  const body = { max_tokens: 60, ignore_eos: true, stream: true };
  let flooding = true;
  const flood = (async () => {
    const sent: Promise<unknown>[] = [];
    for (let i = 0; flooding; i++) {
      const fields = { ...body, messages: [{ role: 'user', content: 'fresh' }] };
      sent.push(postChat(gws[i % 2].url, fields).then((r) => r.arrayBuffer()));
      await sleep(25);
    }
    await Promise.all(sent);
  })();
  await sleep(1_000);
  const keyed: Keyed[] = [];
  const client = async (i: number) => {
    await sleep(i * 100);
    const key = `shared-turn-${tag}-${i}`;
    const fields = { ...body, messages: [{ role: 'user', content: `keyed ${i}` }] };
    const first = await postChat(gws[i % 2].url, fields, { 'idempotency-key': key });
    await first.arrayBuffer();
    if (first.status !== 503) return;
    const kept = first.headers.get('x-goodput-turn') === 'kept';
    await sleep(Number(first.headers.get('retry-after-ms')));
    const retry = await postChat(gws[(i + 1) % 2].url, fields, {
      'idempotency-key': key,
      'x-goodput-attempt': '2',
    });
    await retry.arrayBuffer();
    const keptAgain = retry.headers.get('x-goodput-turn') === 'kept';
    keyed.push({ first: i % 2, kept, retry: retry.status, keptAgain });
  };
  await Promise.all(Array.from({ length: 40 }, (_, i) => client(i)));
  flooding = false;
  await flood;
  return { keyed, gws };
}

test('a retry that lands on another gateway finds the turn kept for it through Redis', async (t) => {
  const sharedRun = await overload(true, 'redis');
  const alone = await overload(false, 'alone');
  const told = (run: { keyed: Keyed[] }) => run.keyed.filter((k) => k.kept);
  const admitted = (run: { keyed: Keyed[] }) => told(run).filter((k) => k.retry === 200).length;
  for (const run of [sharedRun, alone]) {
    assert.ok(told(run).length >= 5, `refused with their turn kept: ${told(run).length}`);
  }
  const [a, b] = [sharedRun, alone].map((run) => `${admitted(run)}/${told(run).length}`);
  t.diagnostic(`retries at the other gateway admitted: ${a} sharing turns, ${b} not`);
  // How many more are admitted is the bench's to measure (bench/live-shared-turns.ts): with
  // the suite's load beside it, 6/28 against 4/32 here, 16/29 against 4/29 on a quiet machine.
  // Each gateway counts the turns it kept, the first attempts' and the retries' kept again.
  // Shared, every first attempt's turn was claimed — taken at the other gateway, and told
  // through Redis; each alone, none was. Every other turn runs out 2 s after it is due (no
  // client came back for it), as /metrics reads it.
  for (const [run, shared] of [
    [sharedRun, true],
    [alone, false],
  ] as const) {
    for (const g of [0, 1]) {
      const url = run.gws[g].url;
      const keptThere = run.keyed.filter((k) => k.kept && k.first === g).length;
      const againThere = run.keyed.filter((k) => k.keptAgain && k.first !== g).length;
      assert.equal(await metricValue(url, 'goodput_kept_turns_total'), keptThere + againThere);
      const ended = (outcome: string) =>
        metricValue(url, 'goodput_kept_turns_ended_total', { outcome });
      const claimed = shared ? keptThere : 0;
      // Pub/sub's word, and the turns' grace, come in their own time: awaited, not timed.
      await until(async () => (await ended('claimed')) === claimed, 3_000);
      const lapsed = keptThere + againThere - claimed;
      await until(async () => (await ended('lapsed')) === lapsed, 3_000);
    }
  }
});

test("a gateway process hearing turns' ends stops on SIGTERM, its subscription gone", async () => {
  const { url, proc } = await startServe([
    ...['--redis', redis.url, '--gateway-replicas', '2', '--profile', 'const:step_ms=2'],
  ]);
  const subscribers = createClient({ url: redis.url });
  await subscribers.connect();
  try {
    const heard = async () => {
      const reply = await subscribers.sendCommand(['PUBSUB', 'NUMSUB', 'goodput:{replicas}:turns']);
      return Array.isArray(reply) ? Number(reply[1]) : NaN;
    };
    // A keyed request looks for its turn in Redis, and the gateway starts hearing turns' ends.
    const res = await postChat(url, { max_tokens: 4 }, { 'idempotency-key': 'process-turn' });
    assert.equal(res.status, 200, await res.text());
    await until(async () => (await heard()) === 1);
    proc.child.kill('SIGTERM');
    assert.deepEqual(await proc.exited, { code: 0, signal: null });
    await until(async () => (await heard()) === 0);
  } finally {
    await subscribers.quit();
  }
});
