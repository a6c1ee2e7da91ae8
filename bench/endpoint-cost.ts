// What a Responses API request costs the gateway beside the chat completion it is served as,
// and what keeping its response costs: `goodput serve` on its embedded fleet, driven by
// `goodput bench`'s own client (src/loadgen) with the same seeded workload on
// `/v1/chat/completions`, on `/v1/responses` with `store: false` and with `store: true` (kept in
// memory), in turn, `--rounds` times each. Per endpoint: completed requests, the gateway
// process's CPU per request (its fleet thread's included: the same workload on each, so the
// difference is the endpoint's), and the client's TTFT and ITL; then the ratios Responses ÷ chat
// and kept ÷ not kept, pooled over rounds.
// Usage: node bench/endpoint-cost.ts [--rate 40] [--requests 400] [--input 200] [--output 64]
//   [--rounds 3] [--step-ms 20]
import { spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { REPO_ROOT, flag } from './bench-args.ts';
import { cpuMs } from './proc-cpu.ts';
import { runBench } from '../src/loadgen/run-bench.ts';
import type { BenchEndpoint } from '../src/loadgen/bench-call.ts';
import { wallClock } from '../src/runtime/wall-clock.ts';
import { wallTimers } from '../src/runtime/wall-timers.ts';
import { percentileSorted } from '../src/core/stats/percentile.ts';

const RATE = Number(flag('--rate') ?? 40);
const REQUESTS = Number(flag('--requests') ?? 400);
const INPUT = Number(flag('--input') ?? 200);
const OUTPUT = Number(flag('--output') ?? 64);
const ROUNDS = Number(flag('--rounds') ?? 3);
const STEP_MS = Number(flag('--step-ms') ?? 20);
/** The endpoints compared: chat, the Responses API kept by none, and kept (`store: true`). */
const VARIANTS = ['chat', 'responses', 'responses, kept'] as const;
type Variant = (typeof VARIANTS)[number];
const ENDPOINT: Readonly<Record<Variant, BenchEndpoint>> = {
  chat: 'chat',
  responses: 'responses',
  'responses, kept': 'responses',
};

const serve = spawn(
  process.execPath,
  ['bin/goodput.js', 'serve', '--port', '0', '--profile', `const:step_ms=${STEP_MS}`],
  { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
);
const url = await new Promise<string>((ok, fail) => {
  let out = '';
  serve.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    const m = /OpenAI API at (http[^\s"]+?)\/v1/.exec(out);
    if (m) ok(m[1]);
  });
  serve.once('exit', (code) => fail(new Error(`goodput serve exited ${code}: ${out}`)));
});
const pid = serve.pid as number;

interface Tally {
  completed: number;
  offered: number;
  cpuMs: number;
  ttft: number[];
  itl: number[];
}
const tallies = new Map<Variant, Tally>(
  VARIANTS.map((e) => [e, { completed: 0, offered: 0, cpuMs: 0, ttft: [], itl: [] }]),
);

try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const variant of round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
      const before = cpuMs(pid);
      const run = await runBench(
        {
          baseUrl: url,
          endpoint: ENDPOINT[variant],
          keepResponses: variant === 'responses, kept',
          workload: {
            rate: RATE,
            numRequests: REQUESTS,
            input: `fixed:${INPUT}`,
            output: `fixed:${OUTPUT}`,
          },
          seed: round + 1,
          sendClass: false,
          percentiles: [99],
          timeoutMs: 60_000,
        },
        { clock: wallClock, timers: wallTimers() },
      );
      const t = tallies.get(variant) as Tally;
      t.cpuMs += cpuMs(pid) - before;
      t.offered += run.offered;
      for (const r of run.records) {
        if (!r.ok) continue;
        t.completed++;
        t.ttft.push(r.tokenTimesMs[0] - r.sentMs);
        for (let i = 1; i < r.tokenTimesMs.length; i++) {
          t.itl.push(r.tokenTimesMs[i] - r.tokenTimesMs[i - 1]);
        }
      }
    }
  }
} finally {
  serve.kill('SIGTERM');
}

const q = (xs: number[], p: number) => percentileSorted(Float64Array.from(xs).sort(), p);
console.log(`machine: ${cpus()[0]?.model} × ${cpus().length}, node ${process.version}`);
console.log(
  `${ROUNDS} rounds × ${REQUESTS} requests at ${RATE}/s, ${INPUT} in, ${OUTPUT} out, step ${STEP_MS} ms\n`,
);
console.log(
  '| endpoint | completed / offered | gateway CPU ms a request | TTFT p50 / p99 ms | ITL p99 ms |',
);
console.log('| --- | ---: | ---: | ---: | ---: |');
const row = (e: Variant) => {
  const t = tallies.get(e) as Tally;
  return { ...t, perRequest: t.cpuMs / Math.max(1, t.completed) };
};
for (const e of VARIANTS) {
  const t = row(e);
  console.log(
    `| ${e} | ${t.completed} / ${t.offered} | ${t.perRequest.toFixed(2)} | ${q(t.ttft, 50).toFixed(1)} / ${q(t.ttft, 99).toFixed(1)} | ${q(t.itl, 99).toFixed(1)} |`,
  );
}
const [chat, responses, kept] = VARIANTS.map(row);
const ratio = (a: ReturnType<typeof row>, b: ReturnType<typeof row>) =>
  `CPU a request ${(a.perRequest / b.perRequest).toFixed(2)}×, TTFT p99 ${(q(a.ttft, 99) / q(b.ttft, 99)).toFixed(2)}×, ITL p99 ${(q(a.itl, 99) / q(b.itl, 99)).toFixed(2)}×`;
console.log(`\nResponses ÷ chat: ${ratio(responses, chat)}`);
console.log(`Responses kept ÷ not kept: ${ratio(kept, responses)}`);
