// How long the gateways sharing a Kubernetes pool go without a leader when the one that leads
// goes: two `goodput serve --engine-pool kubernetes --k8s-lease` processes on one StatefulSet
// of a fake API server (test/gateway/fake-kube.ts: the real API's Lease and scale answers),
// each pod a `goodput engine`. The leader is stopped — SIGTERM (it releases the Lease) or
// SIGKILL (a crash: the Lease must expire) — and the time until another gateway holds the Lease
// is read off the API server. A fresh gateway replaces the stopped one before the next round.
//
//   node bench/lease-handover.ts [--rounds 3]
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { serveEngine, type ListeningEngineServer } from '../src/engine-server/serve.ts';
import { fakeKube, kubePoolFlags } from '../test/gateway/fake-kube.ts';
import { flag } from './bench-args.ts';
import { startGoodput } from './live-processes.ts';

const rounds = Number(flag('--rounds') ?? 3);
const LEASE = 'goodput-vllm';
const tokenFile = join(tmpdir(), `lease-handover-${process.pid}.token`);
writeFileSync(tokenFile, 'bench-token');

const enginePort = 18_900 + (process.pid % 90);
const pods = new Map<number, ListeningEngineServer>();
pods.set(0, await serveEngine({ port: enginePort, host: '127.0.0.10', seed: 0 }));
const api = await fakeKube(
  'bench-token',
  1,
  () => {},
  () => {},
);
const args = [
  'serve',
  '--min-replicas',
  '1',
  '--max-replicas',
  '2',
  ...kubePoolFlags(api, tokenFile, enginePort),
  '--k8s-lease',
  LEASE,
];
const holder = () => api.leases.get(LEASE)?.spec.holderIdentity ?? '';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Until `check` holds, polling every 10 ms; the milliseconds it took. */
async function waitFor(check: () => boolean, limitMs: number): Promise<number> {
  const start = performance.now();
  while (!check()) {
    if (performance.now() - start > limitMs) throw new Error(`not within ${limitMs} ms`);
    await sleep(10);
  }
  return performance.now() - start;
}

const gateways: ChildProcess[] = [];
const start = async () => gateways.push((await startGoodput(args)).child);
await start();
await waitFor(() => holder() !== '', 10_000);
await start();
await sleep(3_000);

const results: Record<string, number[]> = { SIGTERM: [], SIGKILL: [] };
for (let round = 0; round < rounds; round++) {
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    // The gateway that leads: the older of the two, unless a handover made it the newer.
    const was = holder();
    const leader = gateways.shift();
    if (leader === undefined) throw new Error('no gateway');
    leader.kill(signal);
    const ms = await waitFor(() => holder() !== '' && holder() !== was, 30_000);
    results[signal].push(ms);
    console.log(`${signal}: another gateway led ${Math.round(ms)} ms after the leader was stopped`);
    await start();
    await sleep(3_000);
  }
}
for (const g of gateways) g.kill('SIGKILL');
for (const pod of pods.values()) await pod.close();
await api.close();

const summary = (xs: number[]) =>
  `min ${Math.round(Math.min(...xs))} ms, max ${Math.round(Math.max(...xs))} ms over ${xs.length}`;
console.log(`\nSIGTERM (the Lease released): ${summary(results.SIGTERM)}`);
console.log(`SIGKILL (the Lease expires, 15 s): ${summary(results.SIGKILL)}`);
