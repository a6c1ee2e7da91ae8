// A flood of flex requests (OpenAI's `service_tier: "flex"`, served as the deferrable `batch`
// class) at `goodput serve` on the embedded fleet, asked two ways through the Responses API:
// in the foreground, each client holding its connection until its reply, and in the
// background (`background: true`), each answered once admission has decided and polled every
// `--poll-s` until it ends. Per way: how long a client waited for its POST's answer (p50, p99,
// max), how many ran to their end, when the last ended (the makespan), and the polls it took.
// The same N requests (`--requests`, each `--output` tokens), sent at `--rate` a second (all at
// once on two cores, the gateway sheds most as its event loop falls behind, either way), a fresh
// gateway for each way; refusals are counted by reason.
// Usage: node bench/background.ts [--requests 2000] [--rate 200] [--output 128] [--poll-s 2]
//   [--model --gpu --tp --replicas --max-num-seqs]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FLEET_ARGS, intFlag, flag } from './bench-args.ts';
import { metric, startGoodput } from './live-processes.ts';
import { PRESETS } from '../src/core/config/presets.ts';

const N = intFlag('--requests') ?? 2000;
const OUTPUT = intFlag('--output') ?? 128;
const POLL_MS = Number(flag('--poll-s') ?? 2) * 1000;
const RATE = Number(flag('--rate') ?? 200);
const MODEL = flag('--model') ?? 'llama-3-8b';

const dir = mkdtempSync(join(tmpdir(), 'goodput-background-'));
const policyFile = join(dir, 'policy.json');
writeFileSync(
  policyFile,
  JSON.stringify({
    ...PRESETS.goodput,
    name: 'background-bench',
    policy_revision: 'background-bench@1',
    service_tiers: { flex: 'batch' },
  }),
);

interface Way {
  readonly way: string;
  readonly answer_p50_ms: number;
  readonly answer_p99_ms: number;
  readonly answer_max_ms: number;
  readonly ended: Record<string, number>;
  readonly makespan_s: number;
  readonly polls: number;
}

const body = (i: number, background: boolean) =>
  JSON.stringify({
    model: MODEL,
    input: `Summarise the nightly report number ${i} for the operations team.`,
    service_tier: 'flex',
    max_output_tokens: OUTPUT,
    ...(background ? { background: true } : {}),
  });

async function post(
  url: string,
  text: string,
): Promise<{ status: number; json: unknown; reason: string | null }> {
  const res = await fetch(`${url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: text,
  });
  const raw = await res.text();
  const reason = res.headers.get('x-goodput-reason');
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, reason };
}

const statusOf = (json: unknown) => (json as { status?: string } | undefined)?.status;

async function run(background: boolean): Promise<Way> {
  const { url, child } = await startGoodput(['serve', '--policy', policyFile, ...FLEET_ARGS]);
  try {
    const t0 = performance.now();
    const answers: number[] = [];
    const ended: Record<string, number> = {};
    const count = (status: string) => (ended[status] = (ended[status] ?? 0) + 1);
    let last = 0;
    let polls = 0;
    /** Polled as a client polls: every POLL_MS after its last answer, until it has ended. */
    const poll = async (id: string): Promise<void> => {
      for (;;) {
        await new Promise((r) => setTimeout(r, POLL_MS));
        polls++;
        const res = await fetch(`${url}/v1/responses/${id}`);
        const s = statusOf(await res.json());
        if (s === 'queued' || s === 'in_progress') continue;
        count(s ?? `http_${res.status}`);
        last = Math.max(last, performance.now() - t0);
        return;
      }
    };
    await Promise.all(
      Array.from({ length: N }, async (_, i) => {
        // Sent at RATE a second, as an open loop.
        const sendAt = (i * 1000) / RATE;
        await new Promise((r) => setTimeout(r, Math.max(0, t0 + sendAt - performance.now())));
        const sent = performance.now();
        const { status, json, reason } = await post(url, body(i, background));
        const at = performance.now() - t0;
        answers.push(performance.now() - sent);
        const s = statusOf(json);
        if (status !== 200 || s === undefined) count(`${status} ${reason ?? ''}`.trim());
        else if (background && (s === 'queued' || s === 'in_progress')) {
          await poll((json as { id: string }).id);
        } else {
          count(s);
          last = Math.max(last, at);
        }
      }),
    );
    const text = await (await fetch(`${url}/metrics`)).text();
    if (background) {
      const kept = metric(text, 'goodput_background_responses_total', { status: 'incomplete' });
      if (kept !== (ended.incomplete ?? 0)) {
        throw new Error(`the gateway counted ${kept} ended, the client ${ended.incomplete}`);
      }
    }
    answers.sort((a, b) => a - b);
    const q = (p: number) =>
      Math.round(answers[Math.min(answers.length - 1, Math.floor(p * answers.length))]);
    return {
      way: background ? 'background' : 'foreground',
      answer_p50_ms: q(0.5),
      answer_p99_ms: q(0.99),
      answer_max_ms: Math.round(answers.at(-1) ?? 0),
      ended,
      makespan_s: Math.round(last / 100) / 10,
      polls,
    };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

try {
  const ways = [await run(false), await run(true)];
  console.log(
    `${N} flex requests of ${OUTPUT} output tokens at ${RATE}/s, polled every ${POLL_MS / 1000} s`,
  );
  console.table(ways.map((w) => ({ ...w, ended: JSON.stringify(w.ended) })));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
