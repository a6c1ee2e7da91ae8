// `goodput serve --engine-pool kubernetes` end to end, as in a cluster: a StatefulSet's scale
// subresource on a fake API server (real HTTP, the real API's answers), and a kubelet of the
// test's own that runs a `goodput engine` for each ordinal below spec.replicas, each on its own
// loopback address as a pod on its own IP, and removes the highest ordinals first, as the
// StatefulSet controller does. A burst through the real `openai` client makes the gateway scale
// out; every stream ends whole; once the burst is over it scales back in, and each engine the
// kubelet removes had drained first: no stream running on it, none cut. SIGTERM stops the
// gateway and leaves the pods as they are.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serveEngine, type ListeningEngineServer } from '../../src/engine-server/serve.ts';
import { fakeKube, kubePoolFlags } from './fake-kube.ts';
import { freePort } from './redis-kit.ts';
import { startServe, until } from './process-kit.ts';
import { burstEndsWhole, metricAt, poolServeArgs } from './pool-burst.ts';
import { tempDir } from '../temp-dir.ts';

const dir = tempDir('kube-pool');
const TOKEN_FILE = join(dir, 'token');
writeFileSync(TOKEN_FILE, 'sa-token');

test('kubernetes pool: a burst scales the StatefulSet out, then in, each removed pod drained first', async (t) => {
  const port = await freePort();
  const pods = new Map<number, Promise<ListeningEngineServer>>();
  /** Streams running on each pod when the kubelet removed it. */
  const runningAtRemoval: number[] = [];
  const kubelet = (replicas: number) => {
    for (let i = 0; i < replicas; i++) {
      if (!pods.has(i)) {
        pods.set(i, serveEngine({ port, host: `127.0.0.1${i}`, seed: i }));
      }
    }
    for (const [i, pod] of [...pods].sort(([a], [b]) => b - a)) {
      if (i < replicas) continue;
      pods.delete(i);
      void pod.then((e) => {
        runningAtRemoval.push(e.backend.inFlight);
        return e.close();
      });
    }
  };
  kubelet(1);
  t.after(async () => {
    for (const pod of pods.values()) await (await pod).close();
  });
  const api = await fakeKube('sa-token', 1, kubelet);
  const { url, proc } = await startServe([
    ...poolServeArgs(),
    ...kubePoolFlags(api, TOKEN_FILE, port),
  ]);
  t.after(() => proc.child.kill('SIGKILL'));
  const ready = () => metricAt(url, 'goodput_engine_pool_engines', 'state="ready"');
  await until('the first pod ready', async () => (await ready()) === 1, 20_000, 100);

  await burstEndsWhole(url);
  // The decision is taken at the autoscaler's tick (every 5 s), which may come after the burst.
  await until('scaled out', () => Math.max(0, ...api.patches) > 1, 20_000, 100);

  // Scaling in waits out the burst's demand in the autoscaler's window: 10–25 s on an idle
  // machine, over a minute on a loaded one (the suite's other files beside it on 2 cores).
  await until('scaled back in to one pod', () => api.replicas() === 1, 150_000, 200);
  await until('the pods removed', () => runningAtRemoval.length >= 1, 5_000, 50);
  assert.deepEqual(
    runningAtRemoval,
    runningAtRemoval.map(() => 0),
    'every removed pod had drained',
  );
  assert.equal(await metricAt(url, 'goodput_engine_pool_drains_total', 'outcome="cut"'), 0);
  // Logged once the server has answered the patch, and read from the gateway's stdout when the
  // pipe delivers it.
  const lowered = () =>
    proc.jsonLines().some((l) => /^engine pool: replicas \d → 1$/.test(String(l.msg)));
  await until('the gateway logs the replicas lowered', lowered, 10_000, 20);

  // SIGTERM drains the gateway and leaves the pods as they are: they are the cluster's.
  const patches = [...api.patches];
  proc.child.kill('SIGTERM');
  assert.deepEqual(await proc.exited, { code: 0, signal: null });
  assert.deepEqual([api.patches, api.replicas(), pods.size], [patches, 1, 1]);
});
