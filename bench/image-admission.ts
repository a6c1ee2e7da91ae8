// What admission keeps of its promise when the served model's images are sized right, against
// sized an eighth of what they are: two `goodput engine` servers whose model makes each image
// `--engine-image-tokens` prompt tokens (1,024 by default, as Qwen2-VL makes a 900-pixel square
// image), and in front of them `goodput serve --image-tokens` told the same, or an eighth of it.
// An open-loop Poisson load of chats, each a user's question and one image (by URL, a new one
// each: no prefix-cache hits) with 64 tokens of reply, at `--rate` requests a second for
// `--duration` seconds (class interactive: TTFT 2 s, token gaps p99 80 ms). Per setting, from
// the gateway's /metrics: offered, refused, completed, good, attainment over admitted and
// offered, and the backend's count of a prompt over admission's plan, mean (the figure an
// operator reads to set --image-tokens).
// Usage: node bench/image-admission.ts [--rate 40] [--duration 20] [--engine-image-tokens 1024]
import { spawn, type ChildProcess } from 'node:child_process';
import { cpus } from 'node:os';
import { REPO_ROOT, flag } from './bench-args.ts';
import { SeededRng } from '../src/runtime/seeded-rng.ts';

const RATE = Number(flag('--rate') ?? 40);
const DURATION_S = Number(flag('--duration') ?? 20);
const IMAGE_TOKENS = Number(flag('--engine-image-tokens') ?? 1024);
const MODEL = 'llama-3-8b';

/** Runs `goodput ARGS`; resolves with its base URL once it prints it. */
async function start(args: string[]): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['bin/goodput.js', ...args, '--port', '0'], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((ok, fail) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /(?:serving \S+|OpenAI API) at (http[^\s"]+?)\/v1/.exec(out);
      if (m) ok(m[1]);
    });
    child.once('exit', (code) => fail(new Error(`goodput ${args[0]} exited ${code}: ${out}`)));
  });
  return { url, child };
}

/** A metric's value, summed over the series whose labels include `labels`. */
function metric(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) {
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return sum;
}

const question = 'What is wrong in this screenshot of the backup dashboard? Answer briefly.';

async function load(url: string): Promise<{ sent: number; failed: number }> {
  const rng = new SeededRng(7);
  const all: Promise<void>[] = [];
  let failed = 0;
  const startMs = performance.now();
  let atMs = 0;
  for (let i = 0; atMs < DURATION_S * 1000; i++) {
    const wait = startMs + atMs - performance.now();
    if (wait > 0) await new Promise((ok) => setTimeout(ok, wait));
    const body = JSON.stringify({
      model: MODEL,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: question },
            { type: 'image_url', image_url: { url: `https://example.com/shots/${i}.png` } },
          ],
        },
      ],
      max_tokens: 64,
      ignore_eos: true,
    });
    all.push(
      fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      }).then(
        async (r) => void (await r.arrayBuffer()),
        () => void failed++,
      ),
    );
    atMs += -Math.log(1 - rng.next()) * (1000 / RATE);
  }
  await Promise.all(all);
  return { sent: all.length, failed };
}

console.log(`${cpus()[0].model}, ${cpus().length} CPUs, Node ${process.version}`);
console.log(
  `2 × goodput engine (${MODEL}/h100, an image ${IMAGE_TOKENS} tokens); ${RATE} req/s for ${DURATION_S} s\n`,
);
const engines = [
  await start(['engine', '--image-tokens', String(IMAGE_TOKENS), '--seed', '1']),
  await start(['engine', '--image-tokens', String(IMAGE_TOKENS), '--seed', '2']),
];
console.log(
  '| gateway --image-tokens | offered | refused | completed | good | attainment admitted | attainment offered | counted ÷ planned |',
);
console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
try {
  for (const told of [IMAGE_TOKENS, Math.round(IMAGE_TOKENS / 8)]) {
    const backends = engines.flatMap((e) => ['--backend', e.url]);
    const gw = await start(['serve', ...backends, '--image-tokens', String(told)]);
    try {
      const { sent, failed } = await load(gw.url);
      const text = await (await fetch(`${gw.url}/metrics`)).text();
      const refused = metric(text, 'goodput_admission_decisions_total', { outcome: 'reject' });
      const completed = metric(text, 'goodput_completed_requests_total');
      const good = metric(text, 'goodput_good_requests_total');
      const ratio = (series: string) =>
        metric(text, `goodput_prompt_tokens_counted_ratio_${series}`, { images: 'yes' });
      const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
      console.log(
        `| ${told} | ${sent}${failed > 0 ? ` (${failed} failed)` : ''} | ${refused} | ${completed} | ${good} | ${pct(good / Math.max(1, sent - refused))} | ${pct(good / sent)} | ${(ratio('sum') / Math.max(1, ratio('count'))).toFixed(2)} |`,
      );
    } finally {
      gw.child.kill('SIGTERM');
      await new Promise((ok) => gw.child.once('exit', ok));
    }
  }
} finally {
  for (const e of engines) e.child.kill('SIGTERM');
}
