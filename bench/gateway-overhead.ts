// Gateway overhead: one load generator against `goodput engine` directly, through a bare
// streaming proxy on the same HTTP stack (bench/bare-proxy.ts), and through `goodput serve`,
// at 100, 500 and 1,000 concurrent streams, in one run. Each server is its own process; CPU
// is read from /proc for the proxy and the gateway. Reports client-side TTFT and token-gap
// p50/p99, their increase over direct, and CPU per request with the gateway/proxy ratio.
// Usage: node bench/gateway-overhead.ts [--levels 100,500,1000] [--tokens 32] [--step-ms 20]
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { REPO_ROOT, flag } from './bench-args.ts';
import { sseData } from '../src/gateway/sse-reader.ts';
import { percentileSorted } from '../src/core/observe/percentile.ts';

const LEVELS = (flag('--levels') ?? '100,500,1000').split(',').map(Number);
const TOKENS = Number(flag('--tokens') ?? '32');
const STEP_MS = Number(flag('--step-ms') ?? '20');
const root = REPO_ROOT;
const engineFlags = ['--profile', `const:step_ms=${STEP_MS}`, '--max-num-seqs', '2048'];

function start(cmd: string[], pattern: RegExp): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(process.execPath, cmd, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
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

/** utime + stime of a process, in ms (Linux /proc, 100 ticks per second). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

interface Sample {
  ttft: number[];
  gaps: number[];
  failed: number;
}

async function one(url: string, s: Sample): Promise<void> {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'llama-3-8b',
      messages: [{ role: 'user', content: 'measure me' }],
      max_tokens: TOKENS,
      ignore_eos: true,
      stream: true,
    }),
  });
  if (res.status !== 200 || res.body === null) {
    s.failed++;
    await res.body?.cancel();
    return;
  }
  let last = -1;
  for await (const data of sseData(res.body)) {
    if (!data.includes('"content":"') || data.includes('"content":""')) continue;
    const now = performance.now();
    if (last < 0) s.ttft.push(now - t0);
    else s.gaps.push(now - last);
    last = now;
  }
}

async function load(url: string, concurrency: number): Promise<Sample> {
  const s: Sample = { ttft: [], gaps: [], failed: 0 };
  const perWorker = 3;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = 0; i < perWorker; i++) await one(url, s);
    }),
  );
  return s;
}

const pct = (xs: number[], q: number) => percentileSorted(Float64Array.from(xs).sort(), q);
const f = (x: number) => x.toFixed(2);

const engine = await start(
  ['bin/goodput.js', 'engine', '--port', '0', ...engineFlags],
  /serving .* at (http:\/\/\S+)\/v1/,
);
const proxy = await start(['bench/bare-proxy.ts', engine.url], /bare proxy at (http:\/\/\S+)/);
const gateway = await start(
  ['bin/goodput.js', 'serve', '--port', '0', '--backend', engine.url, ...engineFlags],
  /OpenAI API at (http:\/\/\S+)\/v1/,
);
await new Promise((r) => setTimeout(r, 1_500)); // first metrics scrape: the backend is ready

console.log(
  `machine: ${process.arch}, node ${process.version}; ${TOKENS} tokens per stream, engine step ${STEP_MS} ms`,
);
console.log(
  '| streams | path | TTFT p50 / p99 (ms) | gap p50 / p99 (ms) | +TTFT p50 / p99 vs direct | CPU ms / request | failed |',
);
console.log('|---:|---|---:|---:|---:|---:|---:|');
for (const c of LEVELS) {
  const direct = await load(engine.url, c);
  const rows: Array<[string, Sample, number | null]> = [['direct', direct, null]];
  for (const [name, target] of [
    ['bare proxy', proxy],
    ['goodput serve', gateway],
  ] as const) {
    const before = cpuMs(target.proc.pid as number);
    const s = await load(target.url, c);
    rows.push([name, s, (cpuMs(target.proc.pid as number) - before) / Math.max(1, s.ttft.length)]);
  }
  for (const [name, s, cpu] of rows) {
    const dT50 = pct(s.ttft, 50) - pct(direct.ttft, 50);
    const dT99 = pct(s.ttft, 99) - pct(direct.ttft, 99);
    console.log(
      `| ${c} | ${name} | ${f(pct(s.ttft, 50))} / ${f(pct(s.ttft, 99))} | ${f(pct(s.gaps, 50))} / ${f(pct(s.gaps, 99))} | ` +
        `${name === 'direct' ? '—' : `${f(dT50)} / ${f(dT99)}`} | ${cpu === null ? '—' : f(cpu)} | ${s.failed} |`,
    );
  }
}
for (const p of [gateway, proxy, engine]) p.proc.kill('SIGTERM');
