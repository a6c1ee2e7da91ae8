// How cheap the gateway's overload refusals are: wrk (bench/wrk-chat.lua, a ~1 KB streaming
// chat body) against `goodput serve` on its embedded fleet and against a bare node:http server
// that answers every request 503 at once (bench/bare-503.ts), side by side in one run.
// Setups: `overload` — 1,500 connections with no deadline header: the two simulated replicas
// serve what they can and the admission refuses the rest (mostly `deadline`); `door` — 200
// connections each asking `x-goodput-timeout-ms: 5`, inside admission's margin, so every request
// is refused from its headers, its body let go by unread (504 `deadline_exceeded`); `gate` — 200
// connections each asking `x-goodput-timeout-ms: 200`, which the deadline gate judges no replica
// can meet, so every request is read, validated, estimated and refused by admission (503
// `deadline`). Each server is its own process on a core of its own, wrk on the
// others; each setup runs its rounds bare/gateway, gateway/bare, … and pools them, so a slow
// minute falls on both. Reports responses per second, CPU per response of the server process
// (/proc), latency p50/p99, wrk's socket errors, and from the gateway's /metrics what it was
// offered and how it decided; the ratio is gateway ÷ bare.
// Usage: node bench/refusal-rate.ts [--setups overload,door,gate] [--connections 1500,200,200]
//   [--duration 15] [--threads 2] [--rounds 3] [--warmup 5] [--timeout 30] [--json FILE]
//   [--no-pin] [--cpu-prof DIR] [--policy FILE] [--no-fleet-thread]
//   [--model M --gpu G --tp N --replicas N --max-num-seqs N] (the embedded fleet's shape; a small
//   fleet keeps the overload setup's gateway answering refusals rather than relaying streams)
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { availableParallelism, cpus as cpuList } from 'node:os';
import { FLEET_ARGS, REPO_ROOT, flag } from './bench-args.ts';
import { cpuMs } from './proc-cpu.ts';
import {
  addGrowth,
  count as n,
  decided,
  emptyMix,
  idle,
  mixLine,
  scrape,
  type Mix,
} from './gateway-mix.ts';
import { pool, runWrk, type Pooled, type WrkResult } from './wrk-run.ts';

interface Setup {
  readonly name: string;
  readonly connections: number;
  readonly headers: readonly string[];
  /** Every gateway answer must be a refusal. */
  readonly refusedOnly: boolean;
}
const SETUPS: readonly Setup[] = [
  { name: 'overload', connections: 1500, headers: [], refusedOnly: false },
  { name: 'door', connections: 200, headers: ['x-goodput-timeout-ms: 5'], refusedOnly: true },
  { name: 'gate', connections: 200, headers: ['x-goodput-timeout-ms: 200'], refusedOnly: true },
];
const chosen = (flag('--setups') ?? 'overload,door,gate').split(',');
/** `--policy FILE`: the gateway's policy (default: the goodput preset). */
const policyFile = flag('--policy');
const policyFlags = [
  ...(policyFile === undefined ? [] : ['--policy', policyFile]),
  // `--no-fleet-thread`: the embedded engines on the gateway's loop (goodput serve's flag; on a
  // thread of their own by default).
  ...['--fleet-thread', '--no-fleet-thread'].filter((f) => process.argv.includes(f)),
];
const connections = (flag('--connections') ?? '1500,200,200').split(',').map(Number);
const DURATION_S = Number(flag('--duration') ?? '15');
const THREADS = Number(flag('--threads') ?? '2');
const ROUNDS = Number(flag('--rounds') ?? '3');
const WARMUP_S = Number(flag('--warmup') ?? '5');
// Long enough that a served stream (TTFT plus up to 256 tokens) is a response, not a timeout.
const TIMEOUT_S = Number(flag('--timeout') ?? '30');
const jsonFile = flag('--json');
const profileDir = flag('--cpu-prof');
const profileFlags = profileDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', profileDir];
const setups = SETUPS.map((s, i) => ({ ...s, connections: connections[i] ?? s.connections }));
for (const name of chosen) {
  if (!setups.some((s) => s.name === name)) throw new Error(`--setups: no setup named ${name}`);
}

// The server under test alone on the last core; wrk and this script on the others.
const ncpu = availableParallelism();
const pinned = ncpu >= 2 && !process.argv.includes('--no-pin');
const serverCore = String(ncpu - 1);
const loadCores = `0-${ncpu - 2}`;
if (pinned) execFileSync('taskset', ['-pc', loadCores, String(process.pid)], { stdio: 'ignore' });
// Both servers run with the young generation `goodput` runs with (bin/goodput.js).
const NODE_FLAGS = ['--max-semi-space-size=4'];

// Stopped however the run ends, a thrown error or Ctrl-C included: no child outlives the bench.
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of children) p.kill('SIGTERM');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(1));

interface Server {
  readonly proc: ChildProcess;
  readonly url: string;
}

function start(args: string[], pattern: RegExp): Promise<Server> {
  const node = [process.execPath, ...NODE_FLAGS, ...args];
  const [file, argv] = pinned ? ['taskset', ['-c', serverCore, ...node]] : [node[0], node.slice(1)];
  const proc = spawn(file, argv, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(proc);
  return new Promise((ok, fail) => {
    let out = '';
    proc.stdout?.on('data', (d: Buffer) => {
      out = (out + d.toString()).slice(-4096);
      const m = out.match(pattern);
      if (m) ok({ proc, url: m[1] });
    });
    proc.once('exit', (code) => fail(new Error(`${args.join(' ')} exited ${code}: ${out}`)));
  });
}

function stop(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((ok) => {
    const kill = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    proc.once('exit', () => {
      clearTimeout(kill);
      children.delete(proc);
      ok();
    });
    proc.kill('SIGTERM');
  });
}

interface Run {
  readonly wrk: WrkResult;
  readonly cpuMs: number;
}

const wrkCommon = (s: Setup) => ({
  threads: THREADS,
  connections: s.connections,
  timeoutS: TIMEOUT_S,
  headers: s.headers,
  model: flag('--model'),
  cores: pinned ? loadCores : undefined,
  onSpawn: (p: ChildProcess) => {
    children.add(p);
    p.once('exit', () => children.delete(p));
  },
});

async function measure(s: Setup, server: Server, path: string): Promise<Run> {
  const pid = server.proc.pid as number;
  const before = cpuMs(pid);
  const wrk = await runWrk({ ...wrkCommon(s), url: server.url + path, durationS: DURATION_S });
  return { wrk, cpuMs: cpuMs(pid) - before };
}

interface SetupResult {
  readonly setup: Setup;
  readonly bare: { pooled: Pooled; cpuUsPerResponse: number; rounds: Run[] };
  readonly gateway: { pooled: Pooled; cpuUsPerResponse: number; rounds: Run[]; mix: Mix };
}

async function runSetup(s: Setup): Promise<SetupResult> {
  const bare = await start(['bench/bare-503.ts'], /bare 503 at (http:\/\/\S+)/);
  const gateway = await start(
    [...profileFlags, 'bin/goodput.js', 'serve', '--port', '0', ...FLEET_ARGS, ...policyFlags],
    /OpenAI API at (http:\/\/\S+)\/v1/,
  );
  const chat = '/v1/chat/completions';
  await idle(gateway.url); // answers /metrics: up
  // Warm-up, not measured: V8 compiles each server's per-request path, connections open.
  for (const [server, path] of [
    [bare, '/'],
    [gateway, chat],
  ] as const) {
    await runWrk({ ...wrkCommon(s), url: server.url + path, durationS: WARMUP_S });
    if (server === gateway) await idle(gateway.url);
  }
  const bareRuns: Run[] = [];
  const gatewayRuns: Run[] = [];
  const mix = emptyMix();
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? ['bare', 'gateway'] : ['gateway', 'bare'];
    for (const which of order) {
      if (which === 'bare') {
        bareRuns.push(await measure(s, bare, '/'));
        continue;
      }
      const m0 = await scrape(gateway.url);
      gatewayRuns.push(await measure(s, gateway, chat));
      await idle(gateway.url);
      const m1 = await scrape(gateway.url);
      addGrowth(mix, m0, m1);
    }
  }
  await Promise.all([stop(bare.proc), stop(gateway.proc)]);
  const summary = (runs: Run[]) => {
    const pooled = pool(runs.map((r) => r.wrk));
    return { pooled, cpuUsPerResponse: (sum(runs.map((r) => r.cpuMs)) * 1000) / pooled.requests };
  };
  return {
    setup: s,
    bare: { ...summary(bareRuns), rounds: bareRuns },
    gateway: { ...summary(gatewayRuns), rounds: gatewayRuns, mix },
  };
}

const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);

function row(s: Setup, name: string, x: { pooled: Pooled; cpuUsPerResponse: number }): string {
  const p = x.pooled;
  const e = p.errors;
  const sockets = `${e.connect} / ${e.read} / ${e.write} / ${e.timeout}`;
  return (
    `| ${s.name} (${s.connections} conn.) | ${name} | ${n(p.rate)} | ${x.cpuUsPerResponse.toFixed(0)} | ` +
    `${p.p50.toFixed(2)} / ${p.p99.toFixed(2)} | ${n(p.requests - e.status)} / ${n(e.status)} | ${sockets} |`
  );
}

/** What a run's numbers say was not a clean refusal or service, in words. */
function anomalies(r: SetupResult): string[] {
  const out: string[] = [];
  for (const [name, x] of [
    ['bare', r.bare],
    ['gateway', r.gateway],
  ] as const) {
    const e = x.pooled.errors;
    const socket = e.connect + e.read + e.write;
    if (socket > 0)
      out.push(
        `${name}: ${socket} socket errors (connect ${e.connect}, read ${e.read}, write ${e.write})`,
      );
    if (e.timeout > 0) out.push(`${name}: ${e.timeout} timeouts (no answer within ${TIMEOUT_S} s)`);
  }
  if (r.setup.refusedOnly) {
    const served = r.gateway.pooled.requests - r.gateway.pooled.errors.status;
    const admitted = Object.values(decided(r.gateway.mix, ['admit', 'degrade', 'defer']));
    if (served > 0) out.push(`gateway: ${served} answers were not refusals`);
    if (admitted.some((x) => x > 0)) out.push('gateway: admitted requests');
  }
  if (r.bare.pooled.requests !== r.bare.pooled.errors.status)
    out.push('bare: answers other than 503');
  return out;
}

console.log(
  `machine: ${ncpu} CPUs (${cpuList()[0]?.model ?? '?'}), node ${process.version}; ` +
    (pinned
      ? `server on CPU ${serverCore}, wrk (${THREADS} threads) on ${loadCores}; `
      : 'unpinned; ') +
    `${ROUNDS} rounds of ${DURATION_S} s per server and setup after a ${WARMUP_S} s warm-up; ` +
    `fleet: ${FLEET_ARGS.length === 0 ? 'the default' : FLEET_ARGS.join(' ')}`,
);
const results: SetupResult[] = [];
for (const s of setups.filter((x) => chosen.includes(x.name))) {
  const r = await runSetup(s);
  results.push(r);
}
console.log(
  '| setup | server | responses/s | CPU µs / response | latency p50 / p99 (ms) | 2xx / refused (non-2xx) | socket errors: connect / read / write / timeout |',
);
console.log('|---|---|---:|---:|---:|---:|---:|');
for (const r of results) {
  console.log(row(r.setup, 'bare 503', r.bare));
  console.log(row(r.setup, 'goodput serve', r.gateway));
}
console.log('');
for (const r of results) {
  const rate = r.gateway.pooled.rate / r.bare.pooled.rate;
  const cpu = r.gateway.cpuUsPerResponse / r.bare.cpuUsPerResponse;
  const byRound = r.gateway.rounds
    .map((g, i) => {
      const b = r.bare.rounds[i].wrk;
      return (g.wrk.requests / g.wrk.duration_us / (b.requests / b.duration_us)).toFixed(2);
    })
    .join(', ');
  const m = r.gateway.mix;
  console.log(
    `${r.setup.name}: gateway ÷ bare: rate ${rate.toFixed(2)}× (rounds: ${byRound}), ` +
      `CPU per response ${cpu.toFixed(2)}×`,
  );
  console.log(`  gateway's /metrics: ${mixLine(m, r.gateway.pooled.requests)}`);
  const bad = anomalies(r);
  console.log(
    bad.length === 0
      ? '  check: no socket errors or timeouts; every bare answer a 503' +
          (r.setup.refusedOnly ? '; every gateway answer a refusal' : '')
      : `  check: ${bad.join('; ')}`,
  );
}
if (jsonFile !== undefined) {
  const json = {
    machine: { cpus: ncpu, model: cpuList()[0]?.model, node: process.version, pinned },
    options: {
      fleet: FLEET_ARGS.join(' '),
      durationS: DURATION_S,
      threads: THREADS,
      rounds: ROUNDS,
      warmupS: WARMUP_S,
      timeoutS: TIMEOUT_S,
    },
    setups: results.map((r) => ({
      ...r,
      ratio: {
        rate: r.gateway.pooled.rate / r.bare.pooled.rate,
        cpuPerResponse: r.gateway.cpuUsPerResponse / r.bare.cpuUsPerResponse,
      },
    })),
  };
  writeFileSync(jsonFile, JSON.stringify(json, null, 2));
}
process.exit(0); // the servers are stopped on the way out
