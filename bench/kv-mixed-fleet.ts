// A fleet whose replicas hold different KV caches, behind a gateway whose engine flags plan
// them all alike: does the gateway give the smaller cache no more than it holds? Two `goodput
// engine` processes of llama-3-8b on H100s: one at vLLM's default `--gpu-memory-utilization 0.9`
// (28,091 blocks: 449K tokens), one at 0.45 (a GPU shared with another model, or a 40 GB card:
// about 10K blocks), both telling their cache in `vllm:cache_config_info`. `goodput serve` in
// front of them runs the default flags (0.9 for both) under the `goodput` policy, once from this
// checkout and once from `--base DIR`, each with fresh engines and the same seeded load:
// `goodput bench`, Poisson at `--rate` (default 6 req/s), `--num-requests` (default 360)
// completions of 6,000 prompt and 300 output tokens, judged good at TTFT ≤ 2 s and TPOT ≤ 100 ms.
// Per checkout: good requests/s, good of completed, refused or failed, TTFT p50/p99, and on the small
// replica its peak of requests waiting in its own queue and its preemptions (sampled every
// 250 ms from its /metrics).
// Usage: node bench/kv-mixed-fleet.ts --base DIR [--rate 6] [--num-requests 360] [--json FILE]
//   (DIR: a checkout with its own src/ and node_modules, e.g. `git worktree add /tmp/base <commit>`)
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REPO_ROOT, flag } from './bench-args.ts';
import { metric, startGoodput } from './live-processes.ts';

const baseDir = flag('--base');
if (baseDir === undefined) throw new Error('--base DIR: the checkout to compare against');
const RATE = Number(flag('--rate') ?? 6);
const N = Number(flag('--num-requests') ?? 360);
const SMALL_UTIL = flag('--small-utilization') ?? '0.3';

interface Run {
  readonly checkout: string;
  readonly goodRps: number;
  readonly good: number;
  readonly completed: number;
  readonly failed: number;
  readonly ttftP50Ms: number;
  readonly ttftP99Ms: number;
  readonly smallPeakWaiting: number;
  readonly smallPreemptions: number;
  readonly smallServed: number;
  readonly largeServed: number;
}

const scrape = async (url: string) => (await fetch(`${url}/metrics`)).text();

/** Requests an engine ran to more than one token: a staged prompt's pieces each ask for one. */
const served = (text: string) =>
  metric(text, 'vllm:request_generation_tokens_count') -
  metric(text, 'vllm:request_generation_tokens_bucket', { le: '1' });

async function run(checkout: string, root: string): Promise<Run> {
  const children: ChildProcess[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'kv-mixed-'));
  try {
    const small = await startGoodput([
      'engine',
      '--gpu-memory-utilization',
      SMALL_UTIL,
      '--seed',
      '1',
    ]);
    const large = await startGoodput(['engine', '--seed', '2']);
    children.push(small.child, large.child);
    const gw = await startGoodput(
      ['serve', '--backend', small.url, '--backend', large.url, '--policy', 'goodput'],
      root,
    );
    children.push(gw.child);
    for (let i = 0; i < 100 && (await fetch(`${gw.url}/readyz`)).status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    let peakWaiting = 0;
    const sampler = setInterval(() => {
      scrape(small.url).then(
        (t) => (peakWaiting = Math.max(peakWaiting, metric(t, 'vllm:num_requests_waiting'))),
        () => {},
      );
    }, 250);
    const out = join(dir, 'bench.json');
    const bench = spawn(
      process.execPath,
      [
        'bin/goodput.js',
        'bench',
        '--url',
        gw.url,
        '--rate',
        String(RATE),
        '--num-requests',
        String(N),
        '--input',
        'fixed:6000',
        '--output',
        'fixed:300',
        '--seed',
        '7',
        '--goodput',
        'ttft:2000,tpot:100',
        '--metric-percentiles',
        '50,99',
        '--json',
        out,
      ],
      { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'inherit'] },
    );
    children.push(bench);
    await new Promise((ok) => bench.once('exit', ok));
    clearInterval(sampler);
    const r = JSON.parse(readFileSync(out, 'utf8')) as Record<string, number>;
    const [s, l] = [await scrape(small.url), await scrape(large.url)];
    return {
      checkout,
      goodRps: r.request_goodput,
      good: Math.round(r.request_goodput * r.duration),
      completed: r.completed,
      failed: r.failed ?? N - r.completed,
      ttftP50Ms: r.p50_ttft_ms,
      ttftP99Ms: r.p99_ttft_ms,
      smallPeakWaiting: peakWaiting,
      smallPreemptions: metric(s, 'vllm:num_preemptions_total'),
      smallServed: served(s),
      largeServed: served(l),
    };
  } finally {
    for (const c of children) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

const runs = [await run('base', resolve(baseDir)), await run('this', REPO_ROOT)];
console.log(
  '| checkout | good req/s | good / completed | refused or failed | TTFT p50 / p99 (ms) | small: peak waiting | small: preemptions | served small / large |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const r of runs) {
  console.log(
    `| ${r.checkout} | ${r.goodRps.toFixed(2)} | ${r.good} / ${r.completed} | ${r.failed} | ` +
      `${Math.round(r.ttftP50Ms)} / ${Math.round(r.ttftP99Ms)} | ${r.smallPeakWaiting} | ` +
      `${r.smallPreemptions} | ${r.smallServed} / ${r.largeServed} |`,
  );
}
const json = flag('--json');
if (json !== undefined) writeFileSync(json, JSON.stringify(runs, null, 2));
