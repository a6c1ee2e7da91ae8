// Long prompts live: does admission keep its promise to long prompts through the gateway, where
// their waits are turns on held replicas (src/core/estimate/long-turns.ts), timed by real
// clocks? `goodput serve` on its embedded fleet (default 2 × llama-3-8b/h100), driven by
// bench/stream-client.c with streaming chats in cycles of `--long-every` (default 8): one
// carries a prompt of about `--long-tokens` (4,000) tokens never seen before — over a step's
// gap budget, so it goes only where the streams can spare its stall — one the same long prompt
// every time ("shared": a replica that has served it holds it in its prefix cache, so it is
// short there and long everywhere else), and the rest a short question. Phases, one
// gateway, in order: a burst of `--burst` (1,000) at once, then Gamma arrivals (burstiness
// `--burstiness`, 0.2) at each of `--rates` (40,100,200 req/s) for `--seconds` (20) each.
// Per phase and kind (short, long, shared): sent, 200s complete and within the SLO by the client's clock
// (TTFT ≤ 2 s, p99 gap ≤ 80 ms), refused, and from the decision log admitted and expired after
// admission; for those admitted, their wait over the wait predicted (those predicted ≥ 20 ms). Usage: node bench/live-long-prompts.ts [--burst N] [--rates R,R] [--seconds S]
//   [--long-every N] [--long-tokens T] [--burstiness B] [--max-tokens N] [--json FILE]
//   [--model M] [--gpu G] [--tp N] [--replicas N] [--max-num-seqs N] [--policy NAME|FILE]
//   [--keep-log] (keep the gateway's decision log, and say where)
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FLEET_ARGS, flag, intFlag } from './bench-args.ts';
import { runCClient, type CClientOutcome } from './c-client.ts';
import { idle } from './gateway-mix.ts';
import { startGoodput } from './live-processes.ts';
import { arrivalClock } from '../src/sim/workload/arrivals.ts';
import { percentileSorted } from '../src/core/stats/percentile.ts';
import { SeededRng } from '../src/runtime/seeded-rng.ts';

const BURST = intFlag('--burst', 0) ?? 1000;
const RATES = (flag('--rates') ?? '40,100,200').split(',').map(Number);
if (RATES.some((r) => !(r > 0)))
  throw new Error(`--rates: expected rates > 0, got ${flag('--rates')}`);
const SECONDS = intFlag('--seconds') ?? 20;
// The client cycles through at most 16 bodies: one long, one shared, the rest short.
const LONG_EVERY = intFlag('--long-every', 3) ?? 8;
if (LONG_EVERY > 16) throw new Error(`--long-every: expected at most 16, got ${LONG_EVERY}`);
const LONG_TOKENS = intFlag('--long-tokens') ?? 4000;
const BURSTINESS = Number(flag('--burstiness') ?? 0.2);
if (!(BURSTINESS > 0))
  throw new Error(`--burstiness: expected a number > 0, got ${flag('--burstiness')}`);
const MAX_TOKENS = intFlag('--max-tokens') ?? 256;
const TTFT_SLO_MS = 2_000;
const ITL_SLO_MS = 80;

const chat = (content: string) =>
  JSON.stringify({
    model: flag('--model') ?? 'llama-3-8b',
    messages: [{ role: 'user', content }],
    stream: true,
    max_tokens: MAX_TOKENS,
  });
const SHORT = chat('Our nightly backup started failing with SlowDown errors. Why?');
// About one token a word, as the gateway sizes text (src/openai/prompt-tokens.ts). The client
// numbers each request's `@@@@@@@@@@`: a first block no cache holds.
const LONG = chat(`@@@@@@@@@@ ${'word '.repeat(LONG_TOKENS)}`);
const SHARED = chat(`shared ${'word '.repeat(LONG_TOKENS)}`);
const bodies = [...new Array<string>(LONG_EVERY - 2).fill(SHORT), LONG, SHARED];
const KINDS = ['short', 'long', 'shared'] as const;
const kindOf = (o: CClientOutcome) => KINDS[Math.max(0, o.body - (LONG_EVERY - 3))];

const dir = mkdtempSync(join(tmpdir(), 'goodput-long-'));
const decisionFile = join(dir, 'decisions.jsonl');
const policy = flag('--policy');
const gw = await startGoodput([
  'serve',
  ...['--decisions', decisionFile],
  ...FLEET_ARGS,
  ...(policy === undefined ? [] : ['--policy', policy]),
]);
process.on('exit', () => gw.child.kill('SIGKILL'));

/** A decision record of the log, as this bench reads it. */
interface Decision {
  readonly result: string;
  readonly predictedWaitMs: number | null;
  readonly waitedMs: number | null;
}

/** The decision records appended to the log since byte `from`, by request id. */
function decisions(from: number): { byId: Map<string, Decision>; to: number } {
  const text = readFileSync(decisionFile);
  const byId = new Map<string, Decision>();
  for (const line of text.subarray(from).toString().split('\n')) {
    if (line === '') continue;
    const r = JSON.parse(line) as {
      msg?: string;
      request_id: string;
      admission: { result: string; predicted_wait_ms: number | null };
      waited_ms: number | null;
    };
    if (r.msg === 'outcome') continue;
    byId.set(r.request_id, {
      result: r.admission.result,
      predictedWaitMs: r.admission.predicted_wait_ms,
      waitedMs: r.waited_ms,
    });
  }
  return { byId, to: text.length };
}

interface KindRow {
  sent: number;
  completed: number;
  withinSlo: number;
  ttftOver: number;
  gapOver: number;
  refused: number;
  other: number;
  admitted: number;
  expired: number;
  /** Long prompts admitted: wait ÷ predicted, p50 / p90, of those predicted ≥ 20 ms. */
  waitOverPredicted: [number, number] | null;
}

function tally(outcomes: readonly CClientOutcome[], byId: Map<string, Decision>): KindRow {
  const row: KindRow = {
    sent: outcomes.length,
    completed: 0,
    withinSlo: 0,
    ttftOver: 0,
    gapOver: 0,
    refused: 0,
    other: 0,
    admitted: 0,
    expired: 0,
    waitOverPredicted: null,
  };
  const ratios: number[] = [];
  for (const o of outcomes) {
    const d = o.requestId === null ? undefined : byId.get(o.requestId);
    if (d?.result === 'admit' || d?.result === 'degrade' || d?.result === 'expire') row.admitted++;
    if (d?.result === 'expire') row.expired++;
    const predicted = d?.predictedWaitMs ?? 0;
    if (d?.result === 'admit' && predicted >= 20 && d.waitedMs !== null) {
      ratios.push(d.waitedMs / predicted);
    }
    if (o.status === 200 && o.completed) {
      row.completed++;
      const ttftOk = (o.ttftMs ?? Infinity) <= TTFT_SLO_MS;
      const gapOk = o.gapP99Ms <= ITL_SLO_MS;
      if (!ttftOk) row.ttftOver++;
      if (!gapOk) row.gapOver++;
      if (ttftOk && gapOk) row.withinSlo++;
    } else if (o.status === 503 || o.status === 429) row.refused++;
    else row.other++;
  }
  if (ratios.length > 0) {
    ratios.sort((a, b) => a - b);
    const at = (p: number) => Math.round(percentileSorted(ratios, p) * 100) / 100;
    row.waitOverPredicted = [at(50), at(90)];
  }
  return row;
}

interface Phase {
  readonly name: string;
  readonly kinds: Record<(typeof KINDS)[number], KindRow>;
  /** Client answers whose request id no decision record has. */
  readonly unrecorded: number;
}

let logAt = 0;
async function phase(name: string, atMs: readonly number[]): Promise<Phase> {
  await idle(gw.url);
  const outcomes = await runCClient(gw.url, bodies, { mode: 'open', atMs });
  await idle(gw.url);
  // The decision log is written without blocking requests: let it reach the file.
  await new Promise((ok) => setTimeout(ok, 500));
  const { byId, to } = decisions(logAt);
  logAt = to;
  const of = (kind: string) =>
    tally(
      outcomes.filter((o) => kindOf(o) === kind),
      byId,
    );
  return {
    name,
    kinds: { short: of('short'), long: of('long'), shared: of('shared') },
    unrecorded: outcomes.filter((o) => o.requestId !== null && !byId.has(o.requestId)).length,
  };
}

const phases: Phase[] = [];
if (BURST > 0) phases.push(await phase(`burst of ${BURST}`, new Array<number>(BURST).fill(0)));
for (const rate of RATES) {
  const n = Math.round(rate * SECONDS);
  const next = arrivalClock({ rateRps: rate, burstiness: BURSTINESS, count: n }, () =>
    new SeededRng(7).fork('arrivals'),
  );
  const at = Array.from({ length: n }, () => next());
  phases.push(await phase(`Gamma ${BURSTINESS} at ${rate}/s`, at));
}
gw.child.kill('SIGTERM');

console.log(
  `\nof every ${LONG_EVERY}, one new and one shared ~${LONG_TOKENS}-token prompt; max_tokens ${MAX_TOKENS}; ` +
    `within SLO: TTFT ≤ ${TTFT_SLO_MS} ms and p99 gap ≤ ${ITL_SLO_MS} ms by the client\n`,
);
console.log(
  '| phase | kind | sent | admitted | refused | 200 complete (within SLO) | TTFT / gap misses | other | expired after admission | wait ÷ predicted p50 / p90 |',
);
console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const p of phases) {
  for (const [kind, r] of Object.entries(p.kinds)) {
    console.log(
      `| ${p.name} | ${kind} | ${r.sent} | ${r.admitted} | ${r.refused} | ${r.completed} (${r.withinSlo}) | ` +
        `${r.ttftOver} / ${r.gapOver} | ${r.other} | ${r.expired} | ${r.waitOverPredicted?.join(' / ') ?? '–'} |`,
    );
  }
  if (p.unrecorded > 0) console.log(`|  | answers without a decision record: ${p.unrecorded} |`);
}
const out = flag('--json');
if (out !== undefined) writeFileSync(out, JSON.stringify({ phases }, null, 2));
if (process.argv.includes('--keep-log')) console.log(`decision log: ${decisionFile}`);
else rmSync(dir, { recursive: true, force: true });
