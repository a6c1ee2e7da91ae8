// Is a refusal's Retry-After when a retry will be admitted, live? `goodput serve` on its embedded
// fleet (2 × llama-3-8b/h100, each running at most `--max-num-seqs` 16 streams, so that the
// fleet, not the gateway's own CPU, is what is overloaded on a small machine) under a standing
// overload — Debian's wrk, a closed loop of `--connections` (default 200) streaming requests
// without a key, for `--duration` s (default 20) — while `--clients` (default 150) keyed clients arrive one every `--every-ms` (default
// 80 ms) from 3 s in. Each sends one streaming request (wrk's body, its own Idempotency-Key) and,
// refused 503 `deadline`, waits exactly the `retry-after-ms` it was told and tries once more.
// Twice, on a fresh gateway each: with the refused requests' turns kept (`retry_after.keep_turns`,
// the default) and without. Per run: the keyed requests refused, those told their turn is kept,
// the retries admitted (of those, and of the rest), whether every admitted retry's stream met
// the SLO as the client timed it (TTFT ≤ 2 s from the retry's send), and what the gateway
// counted: good requests per second, admitted then expired, turns kept and claimed.
// Usage: node bench/live-kept-turns.ts [--connections 200] [--duration 20] [--clients 150]
//   [--every-ms 80] [--max-num-seqs 16]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { flag } from './bench-args.ts';
import { startGoodput } from './live-processes.ts';
import { runWrk } from './wrk-run.ts';
import { send, tally } from './kept-turns-kit.ts';

const CONNECTIONS = Number(flag('--connections') ?? 200);
const MAX_NUM_SEQS = flag('--max-num-seqs') ?? '16';
const DURATION_S = Number(flag('--duration') ?? 20);
const CLIENTS = Number(flag('--clients') ?? 150);
const EVERY_MS = Number(flag('--every-ms') ?? 80);
async function run(keepTurns: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'kept-turns-'));
  const policy = join(dir, 'policy.json');
  writeFileSync(
    policy,
    JSON.stringify({
      name: 'goodput',
      policy_revision: `kept-turns-${keepTurns}`,
      admission: { type: 'goodput', retry_after: { keep_turns: keepTurns } },
      dispatch: { type: 'flow-control' },
      routing: { type: 'expected-completion' },
    }),
  );
  const { url, child } = await startGoodput([
    'serve',
    ...['--policy', policy, '--max-num-seqs', MAX_NUM_SEQS],
  ]);
  try {
    const before = await (await fetch(`${url}/metrics`)).text();
    const flood = runWrk({
      url: `${url}/v1/chat/completions`,
      threads: 2,
      connections: CONNECTIONS,
      durationS: DURATION_S,
      timeoutS: 30,
      headers: [],
    });
    await sleep(3_000);
    const results = await Promise.all(
      Array.from({ length: CLIENTS }, async (_, i) => {
        await sleep(i * EVERY_MS);
        const key = `kept-${keepTurns}-${i}`;
        const first = await send(url, key, 1);
        if (first.status !== 503 || !Number.isFinite(first.retryAfterMs)) return { first };
        await sleep(first.retryAfterMs);
        return { first, retry: await send(url, key, 2) };
      }),
    );
    await flood;
    const after = await (await fetch(`${url}/metrics`)).text();
    return { keepTurns, ...tally(results, [before], [after], DURATION_S) };
  } finally {
    child.kill('SIGTERM');
    await new Promise((ok) => child.once('exit', ok));
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(
  `2 × llama-3-8b/h100 of ${MAX_NUM_SEQS} streams each; wrk ${CONNECTIONS} connections for ` +
    `${DURATION_S} s; ${CLIENTS} keyed clients, one every ${EVERY_MS} ms`,
);
console.log(
  '| keep_turns | keyed refused | retries admitted at a kept turn | retries admitted, no turn | admitted retries with TTFT > 2 s | good req/s | admitted then expired | turns kept / claimed |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const keep of [true, false]) {
  const r = await run(keep);
  console.log(
    `| ${r.keepTurns} | ${r.refused} | ${r.atTurn} | ${r.noTurn} | ${r.late} | ` +
      `${r.goodPerS.toFixed(1)} | ${r.admittedExpired} | ${r.kept} / ${r.claimed} |`,
  );
}
