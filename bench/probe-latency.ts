// Probes under overload: `goodput serve --status-port` on its embedded fleet, a readiness probe
// (curl) every 100 ms on a new connection, as a kubelet's is, to each port at once, through a
// burst of N streaming requests sent at once (bench/stream-client.c), a closed-loop flood
// (Debian's wrk, 1,500 connections) and the same flood of requests to no route (each a cheap
// 404). The API port lets new connections in at the pace its loop keeps, so a probe there waits
// in that line with the flood; the status port reads it as Node accepts it.
// Per phase and port: probes answered, their latency percentiles, and how many took a second or
// more (a Kubernetes probe's default timeout) or failed.
// Usage: node bench/probe-latency.ts [--burst 3000] [--connections 1500] [--duration 15]
//   [--every-ms 100] [--model M] [--gpu G] [--tp N] [--replicas N] [--max-num-seqs N]
import { spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism, cpus } from 'node:os';
import { FLEET_ARGS, REPO_ROOT, flag } from './bench-args.ts';
import { runCClient } from './c-client.ts';
import { runWrk } from './wrk-run.ts';
import { percentileSorted } from '../src/core/stats/percentile.ts';

const BURST = Number(flag('--burst') ?? 3000);
const CONNECTIONS = Number(flag('--connections') ?? 1500);
const DURATION_S = Number(flag('--duration') ?? 15);
const EVERY_MS = Number(flag('--every-ms') ?? 100);
/** A kubelet's default probe timeout. */
const PROBE_TIMEOUT_MS = 1000;

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of children) p.kill('SIGKILL');
});

/** `goodput serve` with a status port; resolves with both base URLs once it prints them. */
function startGateway(): Promise<{ api: string; status: string }> {
  const args = ['bin/goodput.js', 'serve', '--port', '0', '--status-port', '0', ...FLEET_ARGS];
  const proc = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.add(proc);
  return new Promise((ok, fail) => {
    let out = '';
    proc.stdout?.on('data', (d: Buffer) => {
      out = (out + d.toString()).slice(-8192);
      const api = out.match(/OpenAI API at (http:\/\/\S+)\/v1/)?.[1];
      const status = out.match(/status port at (http:\/\/\S+) /)?.[1];
      if (api !== undefined && status !== undefined) ok({ api, status });
    });
    proc.once('exit', (code) => fail(new Error(`goodput serve exited ${code}: ${out}`)));
  });
}

interface Probe {
  readonly ms: number;
  readonly ok: boolean;
}

/**
 * GET /readyz on a connection of its own, by curl, which times it itself (a Node client sharing
 * two cores with the flood and the gateway would time its own waits for the CPU too): its time
 * from start to the whole answer, and whether a 200.
 */
function probe(base: string): Promise<Probe> {
  const args = ['-s', '-o', '/dev/null', '--max-time', '30', '-w', '%{http_code} %{time_total}'];
  const curl = spawn('curl', [...args, `${base}/readyz`], { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  curl.stdout.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) =>
    curl.once('close', () => {
      const [code, seconds] = out.trim().split(' ');
      resolve({ ms: Number(seconds) * 1000, ok: code === '200' });
    }),
  );
}

/** Probes both ports every EVERY_MS until `stop`; resolves with each port's probes. */
function prober(urls: { api: string; status: string }) {
  const out = { api: [] as Promise<Probe>[], status: [] as Promise<Probe>[] };
  const timer = setInterval(() => {
    out.api.push(probe(urls.api));
    out.status.push(probe(urls.status));
  }, EVERY_MS);
  return async () => {
    clearInterval(timer);
    return { api: await Promise.all(out.api), status: await Promise.all(out.status) };
  };
}

function row(phase: string, port: string, probes: readonly Probe[]): string {
  const ms = probes.map((p) => p.ms).sort((a, b) => a - b);
  const q = (p: number) => percentileSorted(ms, p).toFixed(0);
  const slow = probes.filter((p) => !p.ok || p.ms >= PROBE_TIMEOUT_MS).length;
  return `| ${phase} | ${port} | ${probes.length} | ${q(50)} | ${q(99)} | ${ms.at(-1)?.toFixed(0)} | ${slow} |`;
}

const urls = await startGateway();
const body = JSON.stringify({
  model: flag('--model') ?? 'llama-3-8b',
  messages: [{ role: 'user', content: 'Tell me a story.' }],
  max_tokens: 256,
  stream: true,
});
const rows: string[] = [];
await new Promise((r) => setTimeout(r, 2000));

const stop = prober(urls);
await new Promise((r) => setTimeout(r, 500));
const burst = await runCClient(urls.api, body, { mode: 'open', atMs: Array(BURST).fill(0) });
const probes = await stop();
rows.push(row(`burst of ${BURST}`, 'API', probes.api), row('', 'status', probes.status));
const served = burst.filter((o) => o.status === 200).length;

/** A closed-loop wrk flood of `path` with the probes beside it: its answers. */
async function flood(path: string, phase: string): Promise<number> {
  await new Promise((r) => setTimeout(r, 3000));
  const stop = prober(urls);
  const run = await runWrk({
    url: `${urls.api}${path}`,
    threads: 2,
    connections: CONNECTIONS,
    durationS: DURATION_S,
    timeoutS: 30,
    headers: ['Content-Type: application/json'],
  });
  const probes = await stop();
  rows.push(row(phase, 'API', probes.api), row('', 'status', probes.status));
  return run.requests;
}
const chats = await flood(
  '/v1/chat/completions',
  `wrk, ${CONNECTIONS} connections, ${DURATION_S} s`,
);
// Requests as cheap to refuse as any: each turn of the loop is long with them alone.
const strays = await flood('/v1/no-such-route', `the same, every request a 404`);

console.log(
  `${availableParallelism()} cores (${cpus()[0].model}), Node ${process.version}; burst: ${served} of ${BURST} served (200); wrk: ${chats} answers, then ${strays} 404s`,
);
console.log(
  `| phase | port | probes | p50 ms | p99 ms | max ms | ≥ ${PROBE_TIMEOUT_MS} ms or failed |`,
);
console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) console.log(r);
process.exit(0);
