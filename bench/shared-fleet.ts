// Gateways sharing one fleet, live: 1 and then `--gateways` (default 2) `goodput serve` processes
// in front of the same two `goodput engine`s (llama-3-8b/h100, at most `--max-num-seqs` 16
// streams each, which the gateways are told), under `--rate` (default 50) streaming requests a
// second of 256-token replies for `--duration` s (default 10), alternating between the gateways:
// about three times what the engines serve. Per run: what the gateways admitted and what they
// counted good (its SLO met), the admitted requests' TTFT as the gateways measured it (p50, p90,
// max, from their outcome records), and the 200s their clients timed past 2 s to the first token.
// With `--base DIR` (a worktree of another commit, its node_modules linked) the same runs of that
// code come first, on the same machine, for a side-by-side.
// Usage: node bench/shared-fleet.ts [--gateways 2] [--rate 50] [--duration 10]
//   [--max-num-seqs 16] [--base DIR]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { flag, REPO_ROOT } from './bench-args.ts';
import { metric, startGoodput } from './live-processes.ts';
import { send } from './kept-turns-kit.ts';

const GATEWAYS = Number(flag('--gateways') ?? 2);
const RATE = Number(flag('--rate') ?? 50);
const DURATION_S = Number(flag('--duration') ?? 10);
const MAX_NUM_SEQS = flag('--max-num-seqs') ?? '16';
const BASE = flag('--base');
const TTFT_MS = 2_000;

/** The q-quantile of sorted `xs`, in ms (rounded). */
const quantile = (xs: readonly number[], q: number) =>
  xs.length === 0 ? NaN : Math.round(xs[Math.min(xs.length - 1, Math.floor(q * xs.length))]);

async function run(root: string, gateways: number) {
  const dir = mkdtempSync(join(tmpdir(), 'shared-fleet-'));
  const seats = ['--max-num-seqs', MAX_NUM_SEQS];
  const engines = await Promise.all([0, 1].map(() => startGoodput(['engine', ...seats], root)));
  const backends = engines.flatMap((e) => ['--backend', e.url]);
  const logs = Array.from({ length: gateways }, (_, g) => join(dir, `decisions-${g}.jsonl`));
  const gws = await Promise.all(
    logs.map((log) => startGoodput(['serve', ...backends, ...seats, '--decisions', log], root)),
  );
  try {
    const sent: ReturnType<typeof send>[] = [];
    const end = performance.now() + DURATION_S * 1_000;
    for (let i = 0; performance.now() < end; i++) {
      sent.push(send(gws[i % gateways].url, undefined));
      await sleep(1_000 / RATE);
    }
    const answers = await Promise.all(sent);
    const texts = await Promise.all(gws.map(async (g) => (await fetch(`${g.url}/metrics`)).text()));
    const sum = (name: string, labels: Record<string, string> = {}) =>
      texts.reduce((n, t) => n + metric(t, name, labels), 0);
    const ttfts = logs
      .flatMap((log) => readFileSync(log, 'utf8').trim().split('\n'))
      .map((line) => JSON.parse(line) as { msg: string; outcome?: { ttft_ms: number | null } })
      .flatMap((r) =>
        r.msg === 'outcome' && r.outcome?.ttft_ms != null ? [r.outcome.ttft_ms] : [],
      )
      .sort((a, b) => a - b);
    const ok = answers.filter((a) => a.status === 200);
    return {
      admitted: sum('goodput_admission_decisions_total', { outcome: 'admit' }),
      good: sum('goodput_good_requests_total'),
      ttft: [0.5, 0.9, 1].map((q) => quantile(ttfts, q)).join(' / '),
      late: ok.filter((a) => (a.ttftMs ?? Infinity) > TTFT_MS).length,
      served: ok.length,
    };
  } finally {
    for (const p of [...gws, ...engines]) p.child.kill('SIGTERM');
    await Promise.all(
      [...gws, ...engines].map((p) => new Promise((exit) => p.child.once('exit', exit))),
    );
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(
  `2 × llama-3-8b/h100 of ${MAX_NUM_SEQS} streams each; ${RATE} requests/s of 256-token ` +
    `streams for ${DURATION_S} s, alternating between the gateways`,
);
console.log(
  '| code | gateways | admitted | good | admitted TTFT p50 / p90 / max (ms) | 200s | 200s with client TTFT > 2 s |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|');
for (const [label, root] of [
  ...(BASE === undefined ? [] : [['base', BASE] as const]),
  ['this', REPO_ROOT] as const,
]) {
  for (const gateways of [1, GATEWAYS]) {
    const r = await run(root, gateways);
    console.log(
      `| ${label} | ${gateways} | ${r.admitted} | ${r.good} | ${r.ttft} | ${r.served} | ${r.late} |`,
    );
  }
}
