// What a chat carrying an image costs the gateway to read, against the same chat without it: the
// body read as the gateway reads it (parsed and judged: readRequest), then sized and hashed in
// 16-token blocks for prefix-aware routing (promptView), with the served model's image being
// 576 tokens (LLaVA-1.5's). The image by URL, and inline as a data URL of 100 KiB and 1 MiB of
// base64; beside each, JSON.parse of the same body alone, the floor no reader goes under.
// Medians of `--rounds`, each timed over `--iterations` calls; CPU µs a request.
// Usage: node bench/image-prompts.ts [--rounds 5] [--iterations 200]
import { cpus } from 'node:os';
import { flag } from './bench-args.ts';
import { readRequest } from '../src/gateway/http/read-request.ts';
import { promptView } from '../src/gateway/http/prompt-view.ts';
import type { CompletionsDeps } from '../src/gateway/http/completions.ts';
import { parseImageTokens } from '../src/openai/image-size.ts';

const ROUNDS = Number(flag('--rounds') ?? 5);
const ITERATIONS = Number(flag('--iterations') ?? 200);
const IMAGE_TOKENS = 576;

const deps = {
  servedModels: ['m'],
  fillerReplies: false,
  imageTokens: IMAGE_TOKENS,
} as unknown as CompletionsDeps;

/** Base64 of `bytes` bytes of a repeating pattern, as an inline PNG's URL. */
const inline = (bytes: number) =>
  `data:image/png;base64,${Buffer.alloc(bytes, 'goodput image bytes ').toString('base64')}`;

const question = 'What is wrong in this screenshot of the backup dashboard?';
const body = (image?: string) =>
  JSON.stringify({
    model: 'm',
    messages: [
      { role: 'system', content: 'You are an operations assistant. Answer briefly.' },
      {
        role: 'user',
        content:
          image === undefined
            ? question
            : [
                { type: 'text', text: question },
                { type: 'image_url', image_url: { url: image } },
              ],
      },
    ],
    max_tokens: 256,
  });

/** CPU µs a call: the median over the rounds. */
function median(run: () => unknown): number {
  const cpu: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const used = process.cpuUsage();
    for (let i = 0; i < ITERATIONS; i++) run();
    const { user, system } = process.cpuUsage(used);
    cpu.push((user + system) / ITERATIONS);
  }
  cpu.sort((a, b) => a - b);
  return cpu[Math.floor(cpu.length / 2)];
}

/** Read, sized and hashed as the gateway does a request it admits. */
function read(text: string): number {
  const { parsed } = readRequest('chat', text, deps);
  const view = promptView('chat', parsed, 8192, parseImageTokens(String(IMAGE_TOKENS)));
  return view.inputTokens;
}

console.log(`${cpus()[0].model}, ${cpus().length} CPUs, Node ${process.version}`);
console.log(`${ROUNDS} rounds of ${ITERATIONS} calls; CPU µs a request\n`);
const bodies: [string, string][] = [
  ['text only', body()],
  ['an image by URL', body('https://example.com/dashboards/backup-2026-12-05.png')],
  ['an inline image, 100 KiB', body(inline(75 * 1024))],
  ['an inline image, 1 MiB', body(inline(768 * 1024))],
];
// Warmed up first, so that no row pays for the compiler.
for (const [, text] of bodies) for (let i = 0; i < ITERATIONS; i++) read(text);
console.log(
  '| chat | body | prompt tokens | read, sized, hashed | JSON.parse alone | ÷ JSON.parse |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
const row = (name: string, text: string) => {
  const us = median(() => read(text));
  const parse = median(() => JSON.parse(text));
  const kib = (Buffer.byteLength(text) / 1024).toFixed(1);
  console.log(
    `| ${name} | ${kib} KiB | ${read(text)} | ${us.toFixed(1)} | ${parse.toFixed(1)} | ${(us / parse).toFixed(1)}× |`,
  );
};
for (const [name, text] of bodies) row(name, text);
