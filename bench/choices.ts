// One request of n choices against n requests of one choice, for the rollouts of one prompt (an
// RL trainer's group sampling, a pass@k evaluation): two `goodput engine` servers (llama-3-8b on
// an H100, vLLM V1, its timing profile) behind `goodput serve` (the goodput policy). Open-loop
// Poisson groups at `--rate` groups a second for `--duration` seconds; each group is a new
// prompt of about `--prompt` tokens and `--group` replies of up to `--max-tokens` tokens (the
// engines' own lengths), asked as one request with `n` or as `--group` requests sent together.
// Per mode and rate: groups whose every reply came back, the group's time (sent to its last
// reply) p50 and p90 as the client saw it, replies' tokens a second and those of good requests
// (within their class's objectives, by the gateway's /metrics), prompt tokens the engines computed
// per reply served (prefix-cache queries less hits), replies refused (a request of n choices
// counts n) and why, and the gateway's attainment over admitted requests.
// Usage: node bench/choices.ts [--rates 1,2,4] [--duration 30] [--group 8] [--prompt 1500]
//          [--max-tokens 256] [--modes n,separate] [--decisions DIR]
import { flag } from './bench-args.ts';
import { metric, startGoodput as start } from './live-processes.ts';
import { SeededRng } from '../src/runtime/seeded-rng.ts';
import { percentileSorted } from '../src/core/stats/percentile.ts';

const RATES = (flag('--rates') ?? '1,2,4').split(',').map(Number);
const MODES = (flag('--modes') ?? 'n,separate').split(',') as ('n' | 'separate')[];
/** Where each run's gateway writes its decision log, `DIR/MODE-RATE.jsonl` (default: none). */
const DECISIONS = flag('--decisions');
const DURATION_S = Number(flag('--duration') ?? 30);
const GROUP = Number(flag('--group') ?? 8);
const PROMPT_WORDS = Number(flag('--prompt') ?? 1500);
const MAX_TOKENS = Number(flag('--max-tokens') ?? 256);
const MODEL = 'llama-3-8b';

/** The gateway's refusals by reason, as `reason count` pairs. */
function refusals(text: string): string {
  const counts = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('goodput_admission_decisions_total{') || !line.includes('"reject"'))
      continue;
    const reason = /reason="([^"]*)"/.exec(line)?.[1] ?? '?';
    const n = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (n > 0) counts.set(reason, (counts.get(reason) ?? 0) + n);
  }
  return [...counts].map(([r, n]) => `${r} ${n}`).join(', ') || 'none';
}

/** Group `g`'s prompt: its own first words, so no group finds another's in the prefix cache. */
function prompt(g: number): string {
  const words = ['alpha', 'beta', 'gamma', 'delta', 'omega', 'sigma', 'kappa', 'theta'];
  const body = Array.from({ length: PROMPT_WORDS }, (_, i) => words[(i * 7 + g) % 8]);
  return `Problem ${g}. ${body.join(' ')}`;
}

interface Reply {
  readonly ok: boolean;
  readonly tokens: number;
}

/** One completion asking for `n` choices: each choice's reply, or failures. */
async function ask(url: string, text: string, n: number): Promise<Reply[]> {
  try {
    const res = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: text, n, max_tokens: MAX_TOKENS }),
    });
    if (res.status !== 200) {
      await res.arrayBuffer();
      return Array.from({ length: n }, () => ({ ok: false, tokens: 0 }));
    }
    const body = (await res.json()) as { choices: unknown[]; usage: { completion_tokens: number } };
    // Whole answers give the tokens of all choices together.
    const each = body.usage.completion_tokens / body.choices.length;
    return body.choices.map(() => ({ ok: true, tokens: each }));
  } catch {
    return Array.from({ length: n }, () => ({ ok: false, tokens: 0 }));
  }
}

interface Row {
  readonly mode: string;
  readonly rate: number;
  readonly groups: number;
  readonly whole: number;
  readonly p50: number;
  readonly p90: number;
  readonly tokensPerS: number;
  readonly goodTokensPerS: number;
  readonly promptPerReply: number;
  readonly refused: number;
  readonly reasons: string;
  readonly attainment: number;
}

async function run(mode: 'n' | 'separate', rate: number): Promise<Row> {
  const engines = await Promise.all([0, 1].map((i) => start(['engine', '--seed', String(11 + i)])));
  const gateway = await start([
    'serve',
    '--policy',
    'goodput',
    ...(DECISIONS === undefined ? [] : ['--decisions', `${DECISIONS}/${mode}-${rate}.jsonl`]),
    ...engines.flatMap((e) => ['--backend', e.url]),
  ]);
  try {
    const rng = new SeededRng(5);
    const started = performance.now();
    const groups: Promise<{ ms: number; replies: Reply[] }>[] = [];
    let at = 0;
    for (let g = 0; at < DURATION_S * 1000; g++) {
      const wait = started + at - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const text = prompt(g);
      const sent = performance.now();
      const replies =
        mode === 'n'
          ? ask(gateway.url, text, GROUP)
          : Promise.all(Array.from({ length: GROUP }, () => ask(gateway.url, text, 1))).then((r) =>
              r.flat(),
            );
      groups.push(replies.then((r) => ({ ms: performance.now() - sent, replies: r })));
      at += (-Math.log(1 - rng.next()) / rate) * 1000;
    }
    const done = await Promise.all(groups);
    const elapsedS = (performance.now() - started) / 1000;
    const whole = done.filter((d) => d.replies.every((r) => r.ok));
    const times = whole.map((d) => d.ms).sort((a, b) => a - b);
    const replies = done.flatMap((d) => d.replies);
    const tokens = replies.reduce((s, r) => s + r.tokens, 0);
    const served = replies.filter((r) => r.ok).length;
    let computed = 0;
    for (const e of engines) {
      const text = await (await fetch(`${e.url}/metrics`)).text();
      computed +=
        metric(text, 'vllm:prefix_cache_queries_total') -
        metric(text, 'vllm:prefix_cache_hits_total');
    }
    const m = await (await fetch(`${gateway.url}/metrics`)).text();
    const completed = metric(m, 'goodput_completed_requests_total');
    return {
      mode,
      rate,
      groups: done.length,
      whole: whole.length,
      p50: percentileSorted(times, 50),
      p90: percentileSorted(times, 90),
      tokensPerS: tokens / elapsedS,
      goodTokensPerS: metric(m, 'goodput_good_output_tokens_total') / elapsedS,
      promptPerReply: computed / Math.max(1, served),
      refused: replies.length - served,
      reasons: refusals(m),
      attainment: completed === 0 ? 0 : metric(m, 'goodput_good_requests_total') / completed,
    };
  } finally {
    for (const p of [gateway, ...engines]) p.child.kill('SIGTERM');
  }
}

const rows: Row[] = [];
for (const rate of RATES) for (const mode of MODES) rows.push(await run(mode, rate));
console.log(
  `${GROUP} replies a group, prompts of ~${PROMPT_WORDS} words, max_tokens ${MAX_TOKENS}, ${DURATION_S} s a run`,
);
console.log(
  '| groups/s | asked as | groups | every reply | group p50 / p90 s | reply tok/s | good tok/s | prompt tokens computed a reply | replies refused | attainment over admitted |',
);
console.log('| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  const asked = r.mode === 'n' ? `one, n = ${GROUP}` : `${GROUP} of one`;
  console.log(
    `| ${r.rate} | ${asked} | ${r.groups} | ${r.whole} | ${(r.p50 / 1000).toFixed(2)} / ${(r.p90 / 1000).toFixed(2)} | ${r.tokensPerS.toFixed(0)} | ${r.goodTokensPerS.toFixed(0)} | ${r.promptPerReply.toFixed(0)} | ${r.refused} | ${(100 * r.attainment).toFixed(1)}% |`,
  );
}
for (const r of rows) console.log(`refusals at ${r.rate}/s, ${r.mode}: ${r.reasons}`);
