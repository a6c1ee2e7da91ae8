// Gateway overhead: one load generator against `goodput engine` directly, through a bare
// streaming proxy on the same HTTP stack (bench/bare-proxy.ts; piped into Node's response as
// the gateway writes, and answering with a web Response), and through `goodput serve`,
// at 100, 500 and 1,000 concurrent streams, in one run. Each server is its own process; CPU
// is read from /proc for the proxy and the gateway. Reports client-side TTFT and token-gap
// p50/p99, their increase over direct, and CPU per request with the gateway/proxy ratio, split
// into the main thread's and the other threads' (V8's garbage collection and compilers). Run at
// two `--tokens` values, it splits the gateway's excess into a per-request and a per-token part.
// Usage: node bench/gateway-overhead.ts [--levels 100,500,1000] [--tokens 64] [--step-ms 40]
//   [--rounds 3] [--requests 2 (per slot and round)] [--no-pin] [--cpu-prof DIR]
//   [--policy NAME|FILE] (the gateway's policy, default the goodput preset: `least-request`
//   admits everything and dispatches at once, so what it adds is the gateway's own mechanics,
//   without flow control's deliberate holds)
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { cpuMs } from './proc-cpu.ts';
import { REPO_ROOT, flag } from './bench-args.ts';
import { streamLoad } from './stream-load.ts';
import { percentileSorted } from '../src/core/stats/percentile.ts';

const LEVELS = (flag('--levels') ?? '100,500,1000').split(',').map(Number);
const TOKENS = Number(flag('--tokens') ?? '64');
const STEP_MS = Number(flag('--step-ms') ?? '40');
// `--cpu-prof DIR`: the gateway writes a V8 CPU profile there when the run ends.
const profileDir = flag('--cpu-prof');
const profileFlags = profileDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', profileDir];
const policy = flag('--policy');
const policyFlags = policy === undefined ? [] : ['--policy', policy];
const REQUESTS_PER_SLOT = Number(flag('--requests') ?? '2');
const ROUNDS = Number(flag('--rounds') ?? '3');
const root = REPO_ROOT;
const engineFlags = ['--profile', `const:step_ms=${STEP_MS}`, '--max-num-seqs', '4096'];

// The process under test gets a core of its own; the engine and the load generator share the
// rest, so neither starves the proxy or gateway whose added latency is measured.
const cpus = availableParallelism();
const pinned = cpus >= 2 && !process.argv.includes('--no-pin');
const testCore = String(cpus - 1);
const otherCores = `0-${cpus - 2}`;
if (pinned) execFileSync('taskset', ['-pc', otherCores, String(process.pid)], { stdio: 'ignore' });

// Every server runs with the young generation `goodput` runs with (bin/goodput.js, npm start),
// so the paths differ in their code, not their runtime settings.
const NODE_FLAGS = ['--max-semi-space-size=4'];

// Stopped however the run ends, a thrown error or Ctrl-C included: no server outlives the bench.
const servers: ChildProcess[] = [];
process.on('exit', () => {
  for (const p of servers) p.kill('SIGTERM');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(1));

function start(
  cmd: string[],
  pattern: RegExp,
  cores = otherCores,
): Promise<{ proc: ChildProcess; url: string }> {
  const node = [process.execPath, ...NODE_FLAGS, ...cmd];
  const [file, args] = pinned ? ['taskset', ['-c', cores, ...node]] : [node[0], node.slice(1)];
  const proc = spawn(file, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  servers.push(proc);
  return new Promise((ok, fail) => {
    let out = '';
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = out.match(pattern);
      if (m) ok({ proc, url: m[1] });
    });
    proc.once('exit', (code) => fail(new Error(`${cmd.join(' ')} exited ${code}: ${out}`)));
  });
}

const pct = (xs: number[], q: number) => percentileSorted(Float64Array.from(xs).sort(), q);
const f = (x: number) => x.toFixed(2);

const engine = await start(
  ['bin/goodput.js', 'engine', '--port', '0', ...engineFlags],
  /serving .* at (http:\/\/\S+)\/v1/,
);
const proxy = await start(
  ['bench/bare-proxy.ts', engine.url],
  /bare proxy at (http:\/\/\S+)/,
  testCore,
);
// The same proxy answering with a web Response, as Hono handlers commonly do: the stack's
// other way to stream, for scale.
const webProxy = await start(
  ['bench/bare-proxy.ts', engine.url, '--web-stream'],
  /bare proxy at (http:\/\/\S+)/,
  testCore,
);
const gateway = await start(
  [
    ...profileFlags,
    'bin/goodput.js',
    'serve',
    '--port',
    '0',
    '--backend',
    engine.url,
    ...engineFlags,
    ...policyFlags,
  ],
  /OpenAI API at (http:\/\/\S+)\/v1/,
  testCore,
);
await new Promise((r) => setTimeout(r, 1_500)); // first metrics scrape: the backend is ready

console.log(
  `machine: ${cpus} CPUs, ${process.arch}, node ${process.version}; ` +
    (pinned
      ? `proxy/gateway on CPU ${testCore}, engine and load on ${otherCores}; `
      : 'unpinned; ') +
    `${TOKENS} tokens per stream, engine step ${STEP_MS} ms, ` +
    `${ROUNDS} rounds of ${REQUESTS_PER_SLOT} requests per slot; ` +
    `gateway policy ${policy ?? 'goodput'}`,
);
const load = (url: string, concurrency: number) =>
  streamLoad({
    url,
    concurrency,
    requestsPerSlot: REQUESTS_PER_SLOT,
    maxTokens: TOKENS,
    rampMs: TOKENS * STEP_MS,
  });
console.log(
  '| streams | path | TTFT p50 / p99 (ms) | gap p50 / p99 (ms) | +TTFT p50 / p99 vs direct | CPU ms / request | failed |',
);
console.log('|---:|---|---:|---:|---:|---:|---:|');
// The paths, in the order each round runs them. Each level runs ROUNDS rounds, every path once
// per round in turn, and pools them: a drift in the machine (a noisy neighbour, a slow minute)
// then falls on every path alike, not on whichever ran at that moment.
const paths = [
  ['direct', engine],
  ['bare proxy', proxy],
  ['bare proxy, web stream', webProxy],
  ['goodput serve', gateway],
] as const;
// Warm-up, not measured: open keep-alive pools, and hot paths compiled by V8's optimising
// tier. A function runs once per request there, so it takes hundreds of requests: with 100
// the gateway still cost ~40% more CPU per request than in steady state, the proxy ~30%.
for (const [, target] of paths) {
  await streamLoad({
    url: target.url,
    concurrency: 200,
    requestsPerSlot: 4,
    maxTokens: TOKENS,
    rampMs: TOKENS * STEP_MS,
  });
}
for (const c of LEVELS) {
  const pooled = paths.map(() => ({
    ttft: [] as number[],
    gaps: [] as number[],
    failed: new Map<string, number>(),
    cpu: 0,
    main: 0,
  }));
  const ratios: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const cpu: number[] = [];
    for (const [i, [, target]] of paths.entries()) {
      const pid = target.proc.pid as number;
      const [before, mainBefore] = [cpuMs(pid), cpuMs(pid, pid)];
      const s = await load(target.url, c);
      cpu.push(cpuMs(pid) - before);
      const p = pooled[i];
      p.main += cpuMs(pid, pid) - mainBefore;
      p.ttft = p.ttft.concat(s.ttft);
      p.gaps = p.gaps.concat(s.gaps);
      for (const [why, n] of s.failed) p.failed.set(why, (p.failed.get(why) ?? 0) + n);
      p.cpu += cpu[i];
    }
    ratios.push((cpu[3] / cpu[1]).toFixed(2));
  }
  const perRequest = (i: number) => pooled[i].cpu / Math.max(1, pooled[i].ttft.length);
  const cpuCell = (i: number) => {
    if (i === 0) return '—';
    if (i < 3) return f(perRequest(i));
    const [gw, bare, web] = [perRequest(3), perRequest(1), perRequest(2)];
    return `${f(gw)} (${(gw / bare).toFixed(2)}× proxy, ${(gw / web).toFixed(2)}× web stream)`;
  };
  const direct = pooled[0];
  for (const [i, [name]] of paths.entries()) {
    const s = pooled[i];
    const dT50 = pct(s.ttft, 50) - pct(direct.ttft, 50);
    const dT99 = pct(s.ttft, 99) - pct(direct.ttft, 99);
    console.log(
      `| ${c} | ${name} | ${f(pct(s.ttft, 50))} / ${f(pct(s.ttft, 99))} | ${f(pct(s.gaps, 50))} / ${f(pct(s.gaps, 99))} | ` +
        `${i === 0 ? '—' : `${f(dT50)} / ${f(dT99)}`} | ${cpuCell(i)} | ${[...s.failed.values()].reduce((a, n) => a + n, 0)} |`,
    );
  }
  console.log(`|   | gateway ÷ bare proxy CPU, round by round: ${ratios.join(', ')} | | | | | |`);
  for (const [i, [name]] of paths.entries()) {
    const whys = [...pooled[i].failed].map(([why, n]) => `${why} ×${n}`).join(', ');
    if (whys !== '') console.log(`|   | ${name} failed: ${whys} | | | | | |`);
  }
  // The main thread runs the JavaScript; the others are V8's (garbage collection's parallel and
  // concurrent work, compilation) and libuv's.
  const split = (i: number) => {
    const n = Math.max(1, pooled[i].ttft.length);
    return `${f(pooled[i].main / n)} + ${f((pooled[i].cpu - pooled[i].main) / n)}`;
  };
  console.log(
    `|   | CPU ms / request, main thread + the others: proxy ${split(1)}, gateway ${split(3)} | | | | | |`,
  );
}
process.exit(0); // the servers are stopped on the way out
