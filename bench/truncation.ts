// What `truncation: "auto"` costs the gateway a Responses request: the body read (parsed, made
// into the chat it is) and held to the context, against the same body read with truncation
// off. Conversations of 25, 100 and 400 turns (a user's message of ~60 words, a reply, a tool
// call and its output a turn, ~330 tokens), each sent whole, at a context twice its size (it
// fits: one sizing) and at half its size (it is cut: a bisection of sizings). Medians of
// `--rounds`, each timed over `--iterations` calls, in µs; and the turns kept when cut.
// Usage: node bench/truncation.ts [--rounds 5] [--iterations 50]
import { cpus } from 'node:os';
import { flag } from './bench-args.ts';
import { turn, words } from './conversation-kit.ts';
import { readRequest } from '../src/gateway/http/read-request.ts';
import type { CompletionsDeps } from '../src/gateway/http/completions.ts';
import { truncated } from '../src/gateway/http/kept-responses.ts';
import { GatewayMetrics } from '../src/gateway/gateway-metrics.ts';
import { chatPromptSize } from '../src/openai/prompt-size.ts';
import type { ChatCompletionRequest } from '../src/openai/chat-request.ts';

const ROUNDS = Number(flag('--rounds') ?? 5);
const ITERATIONS = Number(flag('--iterations') ?? 50);
const TURNS = [25, 100, 400];

const metrics = new GatewayMetrics([], ['m']);
const deps = (context: number) =>
  ({
    servedModels: ['m'],
    fillerReplies: false,
    metrics,
    gateway: { pipeline: { spec: { maxModelLen: context } } },
  }) as unknown as CompletionsDeps;

/** Median µs a call of each of `runs`, timed in turn within each round so drift hits all alike. */
function medians(runs: readonly (() => unknown)[]): number[] {
  const times = runs.map(() => [] as number[]);
  for (let r = 0; r < ROUNDS; r++) {
    runs.forEach((run, k) => {
      const start = performance.now();
      for (let i = 0; i < ITERATIONS; i++) run();
      times[k].push(((performance.now() - start) / ITERATIONS) * 1000);
    });
  }
  return times.map((t) => t.sort((a, b) => a - b)[Math.floor(t.length / 2)]);
}

console.log(
  `rounds ${ROUNDS} × ${ITERATIONS} calls; ${cpus()[0]?.model ?? 'cpu'}; node ${process.version}`,
);
console.log(
  '| turns | prompt tokens | off, µs | auto, fits, µs | auto, cut to half, µs | turns kept |',
);
console.log('| ---: | ---: | ---: | ---: | ---: | ---: |');
// Warmed up first, so the first row is not the compiler's.
for (let i = 0; i < 200; i++) {
  const input = Array.from({ length: 25 }, (_, t) => turn(t)).flat();
  const text = JSON.stringify({ model: 'm', input, truncation: 'auto' });
  truncated(readRequest('responses', text, deps(4096)), deps(4096));
}
for (const turns of TURNS) {
  const input = Array.from({ length: turns }, (_, t) => turn(t)).flat();
  input.splice(-3);
  const body = (truncation: string) =>
    JSON.stringify({
      model: 'm',
      instructions: words(30, 0),
      input,
      truncation,
      max_output_tokens: 256,
    });
  const off = body('disabled');
  const auto = body('auto');
  const whole = readRequest('responses', off, deps(1 << 20));
  const tokens = chatPromptSize(whole.parsed as ChatCompletionRequest, 1 << 20).tokens;
  const read = (text: string, context: number) =>
    truncated(readRequest('responses', text, deps(context)), deps(context));
  const cut = read(auto, Math.floor(tokens / 2));
  const kept = (cut.parsed as ChatCompletionRequest).messages.filter((m) => m.role === 'user');
  const [plain, fits, half] = medians([
    () => read(off, 2 * tokens),
    () => read(auto, 2 * tokens),
    () => read(auto, Math.floor(tokens / 2)),
  ]).map((t) => t.toFixed(0));
  console.log(`| ${turns} | ${tokens} | ${plain} | ${fits} | ${half} | ${kept.length} |`);
}
