// Kept turns across gateway replicas, live: two `goodput serve` processes in front of the same
// two `goodput engine`s (llama-3-8b/h100, at most `--max-num-seqs` 16 streams each), under a
// standing overload — `--rate` (default 50) streaming requests a second without a key, about
// three times what the engines serve, alternating between the gateways for `--duration` s
// (default 20) — while `--clients` (default 150) keyed clients arrive one every `--every-ms`
// (default 80 ms) from 3 s in, their first attempts alternating between the gateways. Refused
// 503 `deadline`, each waits the `retry-after-ms` it was told and tries once more at the *other*
// gateway, as a load balancer may send it. Three runs: the gateways sharing a redis-server
// (`--redis`, so a retry finds the turn kept for it anywhere); each with its own state; and, for
// reference, each with its own state and every retry back at the gateway that refused it. Per
// run: the keyed requests refused, the retries admitted (at a kept turn, and with none),
// admitted retries whose client-timed TTFT was over 2 s, and what the gateways counted
// together: good requests per second, admitted then expired, turns kept and claimed.
// Usage: node bench/live-shared-turns.ts [--rate 50] [--duration 20] [--clients 150]
//   [--every-ms 80] [--max-num-seqs 16] [--profile P (engines' and gateways')]
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { flag } from './bench-args.ts';
import { startGoodput, startRedisServer } from './live-processes.ts';
import { body, send, tally } from './kept-turns-kit.ts';

/** A request without a key, its stream read to its end. */
async function fresh(url: string): Promise<void> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  }).catch(() => undefined);
  await res?.arrayBuffer().catch(() => {});
}

const RATE = Number(flag('--rate') ?? 50);
const MAX_NUM_SEQS = flag('--max-num-seqs') ?? '16';
const PROFILE = flag('--profile');
const DURATION_S = Number(flag('--duration') ?? 20);
const CLIENTS = Number(flag('--clients') ?? 150);
const EVERY_MS = Number(flag('--every-ms') ?? 80);

/** The engines' flags, which the gateways are told as an operator states its vLLM's. */
const engineFlags = [
  ...['--max-num-seqs', MAX_NUM_SEQS],
  ...(PROFILE === undefined ? [] : ['--profile', PROFILE]),
];

async function stop(children: readonly ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map((child) => {
      child.kill('SIGTERM');
      return new Promise((ok) => child.once('exit', ok));
    }),
  );
}

async function run(shared: boolean, elsewhere: boolean) {
  const redis = shared ? await startRedisServer() : undefined;
  const engines = await Promise.all([0, 1].map(() => startGoodput(['engine', ...engineFlags])));
  const backends = engines.flatMap((e) => ['--backend', e.url]);
  const store = redis === undefined ? [] : ['--redis', redis.url, '--gateway-replicas', '2'];
  const gateways = await Promise.all(
    [0, 1].map(() => startGoodput(['serve', ...backends, ...engineFlags, ...store])),
  );
  const urls = gateways.map((g) => g.url);
  try {
    const read = () => Promise.all(urls.map(async (u) => (await fetch(`${u}/metrics`)).text()));
    const before = await read();
    // An open loop, not wrk's closed one: a closed loop re-sends each refusal at once, and on
    // a small machine four processes answering thousands of refusals a second starve each other.
    const flood = (async () => {
      const sent: Promise<unknown>[] = [];
      const end = performance.now() + DURATION_S * 1_000;
      for (let i = 0; performance.now() < end; i++) {
        sent.push(fresh(urls[i % 2]));
        await sleep(1_000 / RATE);
      }
      await Promise.all(sent);
    })();
    await sleep(3_000);
    const results = await Promise.all(
      Array.from({ length: CLIENTS }, async (_, i) => {
        await sleep(i * EVERY_MS);
        const key = `shared-${shared}-${elsewhere}-${i}`;
        const first = await send(urls[i % 2], key, 1);
        if (first.status !== 503 || !Number.isFinite(first.retryAfterMs)) return { first };
        await sleep(first.retryAfterMs);
        return { first, retry: await send(urls[(i + (elsewhere ? 1 : 0)) % 2], key, 2) };
      }),
    );
    await flood;
    // Word of turns claimed comes by pub/sub: a moment for the last of it.
    await sleep(500);
    const after = await read();
    return { shared, elsewhere, ...tally(results, before, after, DURATION_S) };
  } finally {
    await stop([...gateways, ...engines].map((p) => p.child));
    await redis?.stop();
  }
}

console.log(
  `2 gateways, 2 × llama-3-8b/h100 of ${MAX_NUM_SEQS} streams each; ${RATE} requests/s ` +
    `for ${DURATION_S} s; ${CLIENTS} keyed clients, one every ${EVERY_MS} ms, each ` +
    'retrying at the other gateway',
);
console.log(
  '| turns shared | retried at | keyed refused | retries admitted at a kept turn | retries admitted, no turn | admitted retries with TTFT > 2 s | good req/s | admitted then expired | turns kept / claimed |',
);
console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|');
// The last: each retry where it was told, as with one gateway — what sharing is to restore.
for (const [shared, elsewhere] of [
  [true, true],
  [false, true],
  [false, false],
]) {
  const r = await run(shared, elsewhere);
  console.log(
    `| ${r.shared ? 'Redis' : 'no'} | ${r.elsewhere ? 'the other' : 'the same'} | ${r.refused} | ${r.atTurn} | ${r.noTurn} | ${r.late} | ` +
      `${r.goodPerS.toFixed(1)} | ${r.admittedExpired} | ${r.kept} / ${r.claimed} |`,
  );
}
