// Admission's promise live: `goodput serve` on its embedded fleet, driven far past capacity,
// must refuse at the door what it cannot serve and serve in time what it admits. Three runs,
// one gateway, in order:
//   burst     — N streaming requests sent at once (default 3,000);
//   sustained — closed loop, 1,500 connections for 15 s, each sending its next streaming request
//               when its last answer ends;
//   gamma     — open loop, Gamma arrivals (burstiness 0.2) at 5× the good requests per second
//               the sustained run served (within SLO by the gateway's measure), for 20 s
//               (`--gamma-rate R`: at R req/s instead, so that runs whose floods went
//               differently compare at one rate).
// The client is bench/stream-client.c (built with gcc on first use): every request's time to
// first token from when it was due, its token gaps, its end and its refusal code, measured by a
// process that costs little next to the gateway. `--client node` uses bench/stream-client.ts
// instead (on two shared cores it is itself the bottleneck past a few hundred streams a
// second); `--flood wrk` runs the sustained phase with Debian's wrk, which judges each answer
// complete or cut but cannot time tokens, plus an open-loop probe of 10 streaming requests a
// second on connections opened before the flood.
// Per run: what the client saw (completed 200s within the SLO — TTFT ≤ 2 s and p99 gap ≤ 80 ms
// — refusals by code, anything else), what the gateway counted (/metrics growth) and what its
// decision log recorded, and the promise: admitted then expired ÷ admitted. Each completed
// stream is also judged twice, by the client and by the gateway's outcome record for its id,
// which also says the longest a token of it waited in the gateway between arrival and write.
// Usage: node bench/live-overload.ts [--burst 3000] [--connections 1500] [--duration 15]
//   [--rate-multiple 5 | --gamma-rate R] [--burstiness 0.2] [--gamma-s 20] [--pin]
//   [--only gamma|burst|sustained] [--client c|node] [--flood c|wrk]
//   [--no-fleet-thread] [--max-tokens 256|N|none] (none: requests carry no max_tokens)
//   [--model M] [--gpu G] [--tp N] [--replicas N] [--max-num-seqs N] (the embedded fleet;
//   default 2 × llama-3-8b/h100 at the engine's own max_num_seqs)
//   [--policy NAME|FILE] [--learned-state FILE] (the gateway starts from it: serve's flag)
//   [--keep-log] (keep the gateway's decision log, and say where) [--json FILE] [--outcomes DIR] (the C client's line per request, a
//   file per phase: burst.tsv, sustained.tsv, gamma.tsv) [--trace-metrics FILE] (the gateway's
//   step share, backends' pace and KV, queue and lag every 250 ms: bench/metrics-trace.ts)
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { FLEET_ARGS, REPO_ROOT, flag } from './bench-args.ts';
import { addGrowth, emptyMix, idle, scrape, type Mix } from './gateway-mix.ts';
import { runCClient } from './c-client.ts';
import { openLoop, warmAgent, type Outcome } from './stream-client.ts';
import { runWrk } from './wrk-run.ts';
import { traceMetrics } from './metrics-trace.ts';
import { arrivalClock } from '../src/sim/workload/arrivals.ts';
import { percentileSorted } from '../src/core/stats/percentile.ts';
import { SeededRng } from '../src/runtime/seeded-rng.ts';

const BURST = Number(flag('--burst') ?? 3000);
const CONNECTIONS = Number(flag('--connections') ?? 1500);
const DURATION_S = Number(flag('--duration') ?? 15);
const RATE_MULTIPLE = Number(flag('--rate-multiple') ?? 5);
const GAMMA_RATE = flag('--gamma-rate') === undefined ? undefined : Number(flag('--gamma-rate'));
if (GAMMA_RATE !== undefined && !(GAMMA_RATE > 0)) {
  throw new Error(`--gamma-rate: expected a rate above 0 req/s, got ${flag('--gamma-rate')}`);
}
/**
 * `--only gamma`: the Gamma run alone, at `--gamma-rate`, on a fresh gateway; `--only burst`:
 * the burst alone; `--only sustained`: the wrk flood alone.
 */
const GAMMA_ONLY = flag('--only') === 'gamma';
const BURST_ONLY = flag('--only') === 'burst';
const SUSTAINED_ONLY = flag('--only') === 'sustained';
if (flag('--only') !== undefined && !GAMMA_ONLY && !BURST_ONLY && !SUSTAINED_ONLY) {
  throw new Error(`--only: expected gamma, burst or sustained, got ${flag('--only')}`);
}
if (GAMMA_ONLY && GAMMA_RATE === undefined) throw new Error('--only gamma: give --gamma-rate');
const BURSTINESS = Number(flag('--burstiness') ?? 0.2);
const GAMMA_S = Number(flag('--gamma-s') ?? 20);
/** `--pin`: the gateway alone on the last core, wrk and this client on the others. */
const PIN = process.argv.includes('--pin');
const cores = availableParallelism();
const MODEL = flag('--model') ?? 'llama-3-8b';
/** `--max-tokens N|none`: each request's max_tokens (default 256); none sends no cap. */
const MAX_TOKENS =
  flag('--max-tokens') === 'none' ? undefined : Number(flag('--max-tokens') ?? 256);
if (MAX_TOKENS !== undefined && !(Number.isInteger(MAX_TOKENS) && MAX_TOKENS >= 1)) {
  throw new Error(`--max-tokens: expected an integer ≥ 1 or none, got ${flag('--max-tokens')}`);
}
const CLIENT = flag('--client') ?? 'c';
const FLOOD = flag('--flood') ?? 'c';
if (CLIENT !== 'c' && CLIENT !== 'node')
  throw new Error(`--client: expected c or node, got ${CLIENT}`);
if (FLOOD !== 'c' && FLOOD !== 'wrk') throw new Error(`--flood: expected c or wrk, got ${FLOOD}`);
/** `taskset -c` list for the load (client, wrk) when `--pin` keeps the last core for the gateway. */
const LOAD_CORES = PIN ? `0-${cores - 2}` : undefined;
const OUTCOMES = flag('--outcomes');
if (OUTCOMES !== undefined) mkdirSync(OUTCOMES, { recursive: true });
/** How the C client runs for `phase`. */
const clientOpts = (phase: string) => ({
  cores: LOAD_CORES,
  keepAs: OUTCOMES === undefined ? undefined : join(OUTCOMES, `${phase}.tsv`),
  onSpawn: (p: ChildProcess) => children.add(p),
});
const TTFT_SLO_MS = 2_000;
const ITL_SLO_MS = 80;

const body = JSON.stringify({
  model: MODEL,
  messages: [
    { role: 'system', content: 'You are a concise assistant for a storage product.' },
    { role: 'user', content: 'Our nightly backup started failing with SlowDown errors. Why?' },
  ],
  stream: true,
  ...(MAX_TOKENS === undefined ? {} : { max_tokens: MAX_TOKENS }),
});

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of children) p.kill('SIGKILL');
});

function startGateway(decisions: string): Promise<{ proc: ChildProcess; url: string }> {
  const args = [
    process.execPath,
    ...['--max-semi-space-size=4', 'bin/goodput.js', 'serve', '--port', '0'],
    ...['--decisions', decisions],
    ...FLEET_ARGS,
    ...['--fleet-thread', '--no-fleet-thread'].filter((f) => process.argv.includes(f)),
    ...(flag('--policy') === undefined ? [] : ['--policy', flag('--policy') as string]),
    ...(flag('--learned-state') === undefined
      ? []
      : ['--learned-state', flag('--learned-state') as string]),
  ];
  const proc = PIN
    ? spawn('taskset', ['-c', String(cores - 1), ...args], {
        cwd: REPO_ROOT,
        stdio: ['ignore', 'pipe', 'inherit'],
      })
    : spawn(args[0], args.slice(1), { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(proc);
  return new Promise((ok, fail) => {
    let out = '';
    proc.stdout?.on('data', (d: Buffer) => {
      out = (out + d.toString()).slice(-8192);
      const m = out.match(/OpenAI API at (http:\/\/\S+)\/v1/);
      if (m) ok({ proc, url: m[1] });
    });
    proc.once('exit', (code) => fail(new Error(`goodput serve exited ${code}: ${out}`)));
  });
}

/** A counter's value summed over its label sets. */
function sum(scraped: Map<string, number>, name: string): number {
  let total = 0;
  for (const [series, v] of scraped) {
    if (series === name || series.startsWith(`${name}{`)) total += v;
  }
  return total;
}

/** How a stream ended by the gateway's outcome record. */
interface Ended {
  readonly good: boolean;
  readonly missed: string | null;
  /** The longest a token of it waited in the gateway between arrival and write. */
  readonly relay_max_ms: number | null;
}

interface Records {
  readonly byResult: Record<string, number>;
  readonly ids: Set<string>;
  /** Outcome records by request id. */
  readonly ended: Map<string, Ended>;
}

/** Decision records appended to the log since `from` (bytes), by result; outcomes by id. */
function records(file: string, from: number): { records: Records; to: number } {
  const text = readFileSync(file);
  const byResult: Record<string, number> = {};
  const ids = new Set<string>();
  const ended = new Map<string, Ended>();
  for (const line of text.subarray(from).toString().split('\n')) {
    if (line === '') continue;
    const r = JSON.parse(line) as {
      msg: string;
      request_id: string;
      admission: { result: string };
      outcome: Ended;
    };
    if (r.msg === 'outcome') {
      ended.set(r.request_id, r.outcome);
      continue;
    }
    byResult[r.admission.result] = (byResult[r.admission.result] ?? 0) + 1;
    ids.add(r.request_id);
  }
  return { records: { byResult, ids, ended }, to: text.length };
}

/**
 * Completed 200s judged by the client and by the gateway's outcome record, stream by stream.
 * The client times from when a request was due, the gateway from when it read it: a TTFT miss
 * only the client saw was lost before the gateway (a connection waiting to be accepted); a gap
 * miss only the client saw, after the gateway's write.
 */
interface Agreement {
  readonly bothGood: number;
  readonly bothMissed: number;
  readonly clientOnlyTtft: number;
  readonly clientOnlyGap: number;
  readonly gatewayOnly: number;
  /** Completed by the client, with no outcome record. */
  readonly unrecorded: number;
  /** The longest wait in the gateway per stream, p50 / p90 / p99 over the completed (ms). */
  readonly relayMs: readonly [number, number, number];
}

function agreement(outcomes: readonly Outcome[], ended: Map<string, Ended>): Agreement {
  const a = {
    bothGood: 0,
    bothMissed: 0,
    clientOnlyTtft: 0,
    clientOnlyGap: 0,
    gatewayOnly: 0,
    unrecorded: 0,
  };
  const relays: number[] = [];
  for (const o of outcomes) {
    if (o.status !== 200 || !o.completed || o.requestId === null) continue;
    const g = ended.get(o.requestId);
    if (g === undefined) {
      a.unrecorded++;
      continue;
    }
    if (g.relay_max_ms !== null) relays.push(g.relay_max_ms);
    const ttftOk = (o.ttftMs ?? Infinity) <= TTFT_SLO_MS;
    const good = ttftOk && o.gapP99Ms <= ITL_SLO_MS;
    if (good && g.good) a.bothGood++;
    else if (!good && !g.good) a.bothMissed++;
    else if (good) a.gatewayOnly++;
    else if (!ttftOk) a.clientOnlyTtft++;
    else a.clientOnlyGap++;
  }
  relays.sort((x, y) => x - y);
  const at = (p: number) =>
    relays.length === 0 ? 0 : Math.round(percentileSorted(relays, p) * 10) / 10;
  return { ...a, relayMs: [at(50), at(90), at(99)] };
}

interface ClientCounts {
  sent: number;
  completed: number;
  withinSlo: number;
  ttftOver: number;
  gapOver: number;
  cut: number;
  refused: Record<string, number>;
  other: Record<string, number>;
  ttftP50: number;
  ttftP99: number;
  /** How long a refusal took to come back, from the scheduled send. */
  refusalP50: number;
  refusalP99: number;
}

function clientCounts(outcomes: readonly Outcome[]): ClientCounts {
  const c: ClientCounts = {
    sent: outcomes.length,
    completed: 0,
    withinSlo: 0,
    ttftOver: 0,
    gapOver: 0,
    cut: 0,
    refused: {},
    other: {},
    ttftP50: 0,
    ttftP99: 0,
    refusalP50: 0,
    refusalP99: 0,
  };
  const ttfts: number[] = [];
  const refusals: number[] = [];
  for (const o of outcomes) {
    if (o.status === 200) {
      if (!o.completed) {
        c.cut++;
        continue;
      }
      c.completed++;
      const ttft = o.ttftMs ?? Infinity;
      ttfts.push(ttft);
      const gapOk = o.gapP99Ms <= ITL_SLO_MS;
      if (ttft > TTFT_SLO_MS) c.ttftOver++;
      if (!gapOk) c.gapOver++;
      if (ttft <= TTFT_SLO_MS && gapOk) c.withinSlo++;
    } else if (o.status === 503 || o.status === 429) {
      const k = `${o.status} ${o.code ?? '?'}`;
      c.refused[k] = (c.refused[k] ?? 0) + 1;
      refusals.push(o.latencyMs);
    } else {
      const k = String(o.status);
      c.other[k] = (c.other[k] ?? 0) + 1;
    }
  }
  const q = (xs: number[], p: number) =>
    xs.length === 0
      ? 0
      : Math.round(
          percentileSorted(
            xs.sort((a, b) => a - b),
            p,
          ),
        );
  c.ttftP50 = q(ttfts, 50);
  c.ttftP99 = q(ttfts, 99);
  c.refusalP50 = q(refusals, 50);
  c.refusalP99 = q(refusals, 99);
  return c;
}

interface RunResult {
  readonly name: string;
  /** Client answers with a request id that no decision record has. */
  readonly unrecorded: number;
  /** Streams the gateway saw complete, and those within their SLO as it measured them. */
  readonly gatewayCompleted: number;
  /** The client's and the gateway's judgement of each completed stream. */
  readonly agreement: Agreement;
  readonly gatewayGood: number;
  readonly client: ClientCounts;
  /** The same, for requests sent on connections already open: the gateway without the accept. */
  readonly openConnections: ClientCounts;
  readonly gateway: Mix;
  readonly log: Record<string, number>;
  readonly expiredShare: number;
  readonly wrk?: unknown;
  readonly durationS: number;
}

const dir = mkdtempSync(join(tmpdir(), 'goodput-live-'));
const decisionFile = join(dir, 'decisions.jsonl');
const gw = await startGateway(decisionFile);
const traceFile = flag('--trace-metrics');
const stopTrace = traceFile === undefined ? undefined : traceMetrics(gw.url, traceFile);
let logAt = 0;

async function measured(
  name: string,
  drive: () => Promise<{ outcomes: Outcome[]; wrk?: unknown; durationS: number }>,
): Promise<RunResult> {
  await idle(gw.url);
  const before = await scrape(gw.url);
  const { outcomes, wrk, durationS } = await drive();
  await idle(gw.url);
  // The decision log is written without blocking requests: let it reach the file.
  await new Promise((ok) => setTimeout(ok, 500));
  const gateway = emptyMix();
  const after = await scrape(gw.url);
  addGrowth(gateway, before, after);
  const grown = (name: string) => sum(after, name) - sum(before, name);
  const logged = records(decisionFile, logAt);
  logAt = logged.to;
  const log = logged.records.byResult;
  const admitted = (log.admit ?? 0) + (log.degrade ?? 0) + (log.expire ?? 0);
  const client = clientCounts(outcomes);
  const unrecorded = outcomes.filter(
    (o) => o.requestId !== null && !logged.records.ids.has(o.requestId),
  ).length;
  return {
    name,
    unrecorded,
    gatewayCompleted: grown('goodput_completed_requests_total'),
    agreement: agreement(outcomes, logged.records.ended),
    gatewayGood: grown('goodput_good_requests_total'),
    client,
    openConnections: clientCounts(outcomes.filter((o) => o.reused)),
    gateway,
    log,
    expiredShare: admitted === 0 ? 0 : (log.expire ?? 0) / admitted,
    wrk,
    durationS,
  };
}

const results: RunResult[] = [];

/** `atMs` (ms from now; all 0 for a burst), open loop, by the chosen client. */
function openLoopRun(phase: string, atMs: readonly number[]): Promise<Outcome[]> {
  return CLIENT === 'c'
    ? runCClient(gw.url, body, { mode: 'open', atMs }, clientOpts(phase))
    : openLoop({ url: gw.url, body }, atMs);
}

if (!GAMMA_ONLY && !SUSTAINED_ONLY) {
  results.push(
    await measured('burst', async () => {
      const t0 = performance.now();
      const outcomes = await openLoopRun('burst', new Array<number>(BURST).fill(0));
      return { outcomes, durationS: (performance.now() - t0) / 1000 };
    }),
  );
}

if (!GAMMA_ONLY && !BURST_ONLY) {
  results.push(
    await measured('sustained', async () => {
      if (FLOOD === 'c') {
        const outcomes = await runCClient(
          gw.url,
          body,
          { mode: 'closed', connections: CONNECTIONS, durationS: DURATION_S },
          clientOpts('sustained'),
        );
        return { outcomes, durationS: DURATION_S };
      }
      const probeAt = Array.from({ length: DURATION_S * 10 }, (_, i) => 500 + i * 100);
      // Enough for every probe of the run: each 200 streams for seconds and holds its connection.
      const probes = await warmAgent(gw.url, DURATION_S * 10);
      const [wrk, outcomes] = await Promise.all([
        runWrk({
          url: `${gw.url}/v1/chat/completions`,
          threads: 2,
          connections: CONNECTIONS,
          durationS: DURATION_S,
          timeoutS: 30,
          headers: [],
          outcomes: true,
          model: MODEL,
          cores: LOAD_CORES,
          onSpawn: (p) => children.add(p),
        }),
        openLoop({ url: gw.url, body }, probeAt, probes),
      ]);
      return { outcomes, wrk, durationS: DURATION_S };
    }),
  );
}

// The fleet's capacity under the flood: the streams the gateway relayed within their SLO, per
// second (wrk cannot time a first token, so its completed streams may include late ones).
const sustained = results.find((r) => r.name === 'sustained');
const goodRps = sustained === undefined ? 0 : sustained.gatewayGood / DURATION_S;
const rate = GAMMA_RATE ?? Math.max(1, RATE_MULTIPLE * goodRps);
if (!BURST_ONLY && !SUSTAINED_ONLY) {
  results.push(
    await measured(`gamma ${BURSTINESS} at ${rate.toFixed(1)}/s`, async () => {
      const n = Math.round(rate * GAMMA_S);
      const next = arrivalClock({ rateRps: rate, burstiness: BURSTINESS, count: n }, () =>
        new SeededRng(7).fork('arrivals'),
      );
      const at = Array.from({ length: n }, () => next());
      const outcomes = await openLoopRun('gamma', at);
      return { outcomes, durationS: GAMMA_S };
    }),
  );
}

stopTrace?.();
gw.proc.kill('SIGTERM');

const fmt = (r: Record<string, number>) =>
  Object.entries(r)
    .map(([k, v]) => `${k} ${v.toLocaleString('en-US')}`)
    .join(', ') || '–';
console.log(
  `\nsustained good requests/s (within SLO by the gateway's measure): ${goodRps.toFixed(1)}; gamma rate ${rate.toFixed(1)}/s\n`,
);
console.log(
  '| run | client: sent | 200 complete (within SLO) | TTFT p50 / p99 ms | 200 cut | refused (p50 / p99 ms) | other | gateway: offered | decisions (/metrics) | decision log | **expired ÷ admitted** |',
);
console.log('|---|---:|---:|---:|---:|---|---|---:|---|---|---:|');
const rows = results.flatMap((r) => [
  r,
  { ...r, name: `${r.name}, on open connections`, client: r.openConnections, wrk: undefined },
]);
for (const r of rows) {
  const c = r.client;
  const w = r.wrk as { outcomes?: Record<string, number>; requests: number } | undefined;
  const wrkPart = w?.outcomes === undefined ? '' : ` + wrk ${fmt(w.outcomes)}`;
  console.log(
    `| ${r.name} | ${c.sent.toLocaleString('en-US')}${wrkPart} | ${c.completed} (${c.withinSlo}) | ` +
      `${c.ttftP50} / ${c.ttftP99} | ${c.cut} | ${fmt(c.refused)} (${c.refusalP50} / ${c.refusalP99}) | ${fmt(c.other)} | ` +
      `${r.gateway.offered.toLocaleString('en-US')} | ${fmt(r.gateway.decisions)} | ${fmt(r.log)} | ` +
      `**${(r.expiredShare * 100).toFixed(2)}%** |`,
  );
}
console.log('\nchecks (client against /metrics and the decision log):');
for (const r of results) {
  const c = r.client;
  const w = (r.wrk as { outcomes?: Record<string, number> } | undefined)?.outcomes ?? {};
  const served = c.completed + c.cut + (w.completed ?? 0) + (w.cut ?? 0);
  const refused = Object.values(c.refused).reduce((a, b) => a + b, 0) + (w.refused ?? 0);
  const admits =
    (r.gateway.decisions['admit/none'] ?? 0) + (r.gateway.decisions['degrade/none'] ?? 0);
  const logRefused = (r.log.reject ?? 0) + (r.log.expire ?? 0);
  const wrk =
    r.wrk === undefined
      ? ''
      : ' (with wrk, which does not report the requests in flight when it stops)';
  console.log(
    `  ${r.name}: the gateway saw ${r.gatewayCompleted} streams complete, ${r.gatewayGood} within their SLO; ` +
      `the client's misses: TTFT ${c.ttftOver}, token gap ${c.gapOver}; ` +
      `200s — client ${served}, log ${r.log.admit ?? 0}, /metrics ${admits}; ` +
      `refusals — client ${refused}, log ${logRefused}; answers without a record: ${r.unrecorded}${wrk}`,
  );
  const a = r.agreement;
  console.log(
    `    stream by stream (client / outcome record): both good ${a.bothGood}, both missed ${a.bothMissed}; ` +
      `missed by the client alone — TTFT ${a.clientOnlyTtft} (before the gateway read it), gap ${a.clientOnlyGap} (after its write); ` +
      `by the gateway alone ${a.gatewayOnly}; completed without an outcome record ${a.unrecorded}; ` +
      `longest wait in the gateway per stream p50 / p90 / p99 ${a.relayMs.join(' / ')} ms`,
  );
}
const out = flag('--json');
if (out !== undefined) writeFileSync(out, JSON.stringify({ goodRps, rate, results }, null, 2));
// The gateway's decision log (tens of MB a run) is kept only when asked for.
if (process.argv.includes('--keep-log')) console.log(`decision log: ${decisionFile}`);
else rmSync(dir, { recursive: true, force: true });
