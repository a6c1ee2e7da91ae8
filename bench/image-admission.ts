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
// `--images mix`: each image inline instead, of one of three sizes in turn — a 224 × 224
// thumbnail, a 1,024 × 768 photo, a 1,920 × 1,080 screenshot — for a model that sizes images by
// their size (`--engine-image-tokens qwen2-vl`: 66, 1,001 and 2,693 tokens); `--told` lists the
// gateway's settings to compare, e.g. `qwen2-vl,1253` (1,253: the mix's mean).
// Usage: node bench/image-admission.ts [--rate 40] [--duration 20] [--engine-image-tokens 1024]
//          [--images url|mix] [--told LIST]
import { cpus } from 'node:os';
import { flag } from './bench-args.ts';
import { metric, startGoodput as start } from './live-processes.ts';
import { SeededRng } from '../src/runtime/seeded-rng.ts';
import { solidPng } from '../test/gateway/solid-png.ts';

const RATE = Number(flag('--rate') ?? 40);
const DURATION_S = Number(flag('--duration') ?? 20);
const ENGINE_IMAGES = flag('--engine-image-tokens') ?? '1024';
const IMAGES = flag('--images') ?? 'url';
const TOLD = (flag('--told') ?? `${ENGINE_IMAGES},${Math.round(Number(ENGINE_IMAGES) / 8)}`).split(
  ',',
);
const SIZES = [
  [224, 224],
  [1024, 768],
  [1920, 1080],
] as const;
const MODEL = 'llama-3-8b';

const question = 'What is wrong in this screenshot of the backup dashboard? Answer briefly.';

/** The `i`th request's image: by URL, or inline, of the mix's sizes in turn. */
function imageUrl(i: number): string {
  if (IMAGES === 'url') return `https://example.com/shots/${i}.png`;
  const [width, height] = SIZES[i % SIZES.length];
  return solidPng(width, height, 0x80, String(i));
}

/** Requests sent, those that failed, and by the mix's image sizes, how many went and got 200. */
async function load(
  url: string,
): Promise<{ sent: number; failed: number; bySize: { sent: number; ok: number }[] }> {
  const rng = new SeededRng(7);
  const all: Promise<void>[] = [];
  let failed = 0;
  const bySize = SIZES.map(() => ({ sent: 0, ok: 0 }));
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
            { type: 'image_url', image_url: { url: imageUrl(i) } },
          ],
        },
      ],
      max_tokens: 64,
      ignore_eos: true,
    });
    const size = bySize[i % SIZES.length];
    size.sent++;
    all.push(
      fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      }).then(
        async (r) => {
          await r.arrayBuffer();
          if (r.status === 200) size.ok++;
        },
        () => void failed++,
      ),
    );
    atMs += -Math.log(1 - rng.next()) * (1000 / RATE);
  }
  await Promise.all(all);
  return { sent: all.length, failed, bySize };
}

console.log(`${cpus()[0].model}, ${cpus().length} CPUs, Node ${process.version}`);
console.log(
  `2 × goodput engine (${MODEL}/h100, images by --image-tokens ${ENGINE_IMAGES}); images ${IMAGES}; ${RATE} req/s for ${DURATION_S} s\n`,
);
const engines = [
  await start(['engine', '--image-tokens', ENGINE_IMAGES, '--seed', '1']),
  await start(['engine', '--image-tokens', ENGINE_IMAGES, '--seed', '2']),
];
console.log(
  `| gateway --image-tokens | offered | refused | completed | good | attainment admitted | attainment offered | counted ÷ planned |${IMAGES === 'mix' ? ' answered 200, by image |' : ''}`,
);
console.log(
  `| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |${IMAGES === 'mix' ? ' --- |' : ''}`,
);
try {
  for (const told of TOLD) {
    const backends = engines.flatMap((e) => ['--backend', e.url]);
    const gw = await start(['serve', ...backends, '--image-tokens', told]);
    try {
      const { sent, failed, bySize } = await load(gw.url);
      const text = await (await fetch(`${gw.url}/metrics`)).text();
      const refused = metric(text, 'goodput_admission_decisions_total', { outcome: 'reject' });
      const reasons = new Map<string, number>();
      for (const [, reason, n] of text.matchAll(
        /^goodput_admission_decisions_total\{[^}]*outcome="reject"[^}]*reason="([^"]+)"[^}]*\} (\d+)/gm,
      )) {
        reasons.set(reason, (reasons.get(reason) ?? 0) + Number(n));
      }
      const why = [...reasons].map(([r, n]) => `${n} ${r}`).join(', ');
      const completed = metric(text, 'goodput_completed_requests_total');
      const good = metric(text, 'goodput_good_requests_total');
      const ratio = (series: string) =>
        metric(text, `goodput_prompt_tokens_counted_ratio_${series}`, { images: 'yes' });
      const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
      console.log(
        `| ${told} | ${sent}${failed > 0 ? ` (${failed} failed)` : ''} | ${refused}${why === '' ? '' : ` (${why})`} | ${completed} | ${good} | ${pct(good / Math.max(1, sent - refused))} | ${pct(good / sent)} | ${(ratio('sum') / Math.max(1, ratio('count'))).toFixed(2)} |${IMAGES === 'mix' ? ` ${bySize.map((b, k) => `${SIZES[k].join('×')}: ${b.ok}/${b.sent}`).join(', ')} |` : ''}`,
      );
    } finally {
      gw.child.kill('SIGTERM');
      await new Promise((ok) => gw.child.once('exit', ok));
    }
  }
} finally {
  for (const e of engines) e.child.kill('SIGTERM');
}
