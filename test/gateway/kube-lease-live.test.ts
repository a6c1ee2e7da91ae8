// Two `goodput serve` processes on one StatefulSet, as two gateway pods behind one Service and
// one Redis: they elect the one that scales on a Lease of the fake API server (`--k8s-lease`).
// The other takes all the requests — the leader decides on the demand it reads from Redis. When
// the leader drains a replica, the other is told, routes nothing new to it, and the leader lowers
// the replicas only once that replica has finished the other's streams too: the removed pod ran
// none, no stream was cut. An operator's freeze asked of the other holds the leader (the Lease
// carries it). SIGTERM to the leader releases the Lease and the other leads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { serveEngine, type ListeningEngineServer } from '../../src/engine-server/serve.ts';
import { fakeKube, kubePoolFlags } from './fake-kube.ts';
import { freePort, startRedis } from './redis-kit.ts';
import { startServe, until } from './process-kit.ts';
import { metricAt, poolServeArgs } from './pool-burst.ts';
import { tempDir } from '../temp-dir.ts';

const dir = tempDir('kube-lease');
const TOKEN_FILE = join(dir, 'token');
writeFileSync(TOKEN_FILE, 'sa-token');

test('two gateways on one StatefulSet: one scales, the other follows its drain; SIGTERM hands over the Lease', async (t) => {
  const port = await freePort();
  const pods = new Map<number, ListeningEngineServer>();
  const runningAtRemoval: number[] = [];
  const kubelet = (replicas: number) => {
    for (const [i, pod] of [...pods].sort(([a], [b]) => b - a)) {
      if (i < replicas) continue;
      pods.delete(i);
      runningAtRemoval.push(pod.backend.inFlight);
      void pod.close();
    }
  };
  for (const i of [0, 1]) pods.set(i, await serveEngine({ port, host: `127.0.0.1${i}`, seed: i }));
  t.after(async () => {
    for (const pod of pods.values()) await pod.close();
  });
  const api = await fakeKube('sa-token', 2, kubelet);
  const redis = await startRedis();
  const args = [
    ...poolServeArgs(),
    '--redis',
    redis.url,
    '--gateway-replicas',
    '2',
    '--admin-token',
    'ops',
    ...kubePoolFlags(api, TOKEN_FILE, port),
    '--k8s-lease',
    'goodput-vllm',
  ];
  const leads = (url: string) => metricAt(url, 'goodput_engine_pool_leader', '');
  const a = await startServe(args);
  t.after(() => a.proc.child.kill('SIGKILL'));
  await until('a leads', async () => (await leads(a.url)) === 1, 20_000, 100);
  const b = await startServe(args);
  t.after(() => b.proc.child.kill('SIGKILL'));
  const ready = (url: string) => metricAt(url, 'goodput_engine_pool_engines', 'state="ready"');
  await until('b sees both replicas ready', async () => (await ready(b.url)) === 2, 20_000, 100);
  assert.equal(await leads(b.url), 0);
  // The autoscaler is held until b's streams run, by a freeze asked of b: the Lease carries it
  // to a, which leads.
  const freeze = (frozen: boolean) =>
    fetch(`${b.url}/admin/autoscale`, {
      method: 'PUT',
      headers: { authorization: 'Bearer ops', 'content-type': 'application/json' },
      body: JSON.stringify({ frozen }),
    });
  const frozen = (url: string) => metricAt(url, 'goodput_autoscale_frozen', '');
  assert.equal((await freeze(true)).status, 200);
  await until('a frozen through b', async () => (await frozen(a.url)) === 1, 15_000, 100);

  const client = new OpenAI({ baseURL: `${b.url}/v1`, apiKey: 'none', maxRetries: 0 });
  // A few short answers first: the request mix the autoscaler sizes capacity by.
  for (let i = 0; i < 4; i++) {
    await client.completions.create({ model: 'llama-3-8b', prompt: 'hi', max_tokens: 16 });
  }
  await until(
    "a hears b's demand",
    async () => (await metricAt(a.url, 'goodput_autoscale_peers', '')) === 1,
    10_000,
    100,
  );
  const streams = Array.from({ length: 6 }, async () => {
    // vLLM's `ignore_eos` (not in the OpenAI types): each runs its 1,500 tokens, ~10 s.
    const ask = { model: 'llama-3-8b', prompt: 'a story', max_tokens: 1500, stream: true } as const;
    const stream = await client.completions.create({ ...ask, ignore_eos: true } as typeof ask);
    let finish: string | null = null;
    for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
    return finish;
  }).map((s) => s.catch((e: Error) => e.message));
  await until('streams on replica 1', () => pods.get(1)?.backend.inFlight !== 0, 10_000, 20);

  assert.equal((await freeze(false)).status, 200);
  const draining = (url: string) =>
    metricAt(url, 'goodput_engine_pool_engines', 'state="draining"');
  await until('b is told of the drain', async () => (await draining(b.url)) === 1, 20_000, 100);
  assert.ok((pods.get(1)?.backend.inFlight ?? 0) > 0, "b's streams still run on the replica");
  assert.deepEqual(api.patches, [], 'not lowered while they do');

  assert.deepEqual(await Promise.all(streams), Array(6).fill('length'));
  await until('lowered to one replica', () => api.replicas() === 1, 20_000, 100);
  assert.deepEqual(runningAtRemoval, [0], 'the removed pod ran no stream');
  assert.equal(await metricAt(a.url, 'goodput_engine_pool_drains_total', 'outcome="cut"'), 0);

  const lease = () => api.leases.get('goodput-vllm')?.spec;
  const holder = lease()?.holderIdentity;
  a.proc.child.kill('SIGTERM');
  assert.deepEqual(await a.proc.exited, { code: 0, signal: null });
  await until('b leads', async () => (await leads(b.url)) === 1, 10_000, 100);
  assert.notEqual(lease()?.holderIdentity, holder);
  assert.equal(lease()?.leaseTransitions, 1);
  assert.deepEqual(api.patches, [1], 'b found the object as a left it');
});
