// How far the gateway's plan of a chat prompt is from what a vLLM serving Llama 3.1 counts, with
// the plan scaled by the backends' counts (src/core/estimate/prompt-scale.ts) and without. Each
// stream of chats is 600 requests of one user message, k copies of a sample text
// (bench/prompt-samples.ts; k from 1 to 40, seeded), some with a system message. The backend's
// count is Llama 3's tokenizer over the chat as Llama 3.1's template renders it (its special
// tokens one each, and its system header with the knowledge-cutoff lines every chat gets).
// Each request is planned before its own count is learned from, as the gateway does it. Usage:
//   node bench/prompt-scale.ts
import llama3 from 'llama3-tokenizer-js';
import { PromptScale } from '../src/core/estimate/prompt-scale.ts';
import { SeededRng } from '../src/runtime/seeded-rng.ts';
import { estimateChatPrompt } from '../src/openai/prompt-tokens.ts';
import { PROMPT_SAMPLES } from './prompt-samples.ts';

const REQUESTS = 600;
/** Requests the scale has learned from before its plans are judged. */
const WARM = 100;
const SYSTEM = 'You are a careful assistant. Answer in the language of the question.';
const CUTOFF = 'Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n';

const encoded = (text: string) => llama3.encode(text, { bos: false, eos: false }).length;

/**
 * Llama 3.1's chat template over a system message (empty: none) and a user message: BOS, each
 * turn's header (`<|start_header_id|>role<|end_header_id|>` and a blank line), its text and
 * `<|eot_id|>`, then the assistant's header. Special tokens are one each.
 */
function llama31Count(system: string, user: string): number {
  const turn = (role: string, text: string) => 3 + encoded(role) + encoded(`\n\n${text}`);
  return 1 + turn('system', CUTOFF + system) + turn('user', user) + 3 + encoded('assistant\n\n');
}

interface Errors {
  readonly ratios: number[];
}

function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

function row(name: string, plan: string, e: Errors): string {
  const r = e.ratios;
  const abs = r.map((x) => Math.abs(1 / x - 1));
  const mean = abs.reduce((a, b) => a + b, 0) / abs.length;
  const q = (p: number) => quantile(r, p).toFixed(2);
  return `| ${name} | ${plan} | ${q(0.1)} | ${q(0.5)} | ${q(0.9)} | ${(100 * mean).toFixed(1)}% |`;
}

const streams: Readonly<Record<string, readonly string[]>> = {
  'English chats': ['english'],
  'code and JSON': ['code', 'json'],
  'European languages': ['english', 'german', 'spanish', 'russian'],
  'Chinese, Japanese, Korean': ['chinese', 'japanese', 'korean'],
  'every sample, mixed': Object.keys(PROMPT_SAMPLES),
};

console.log(`| stream | plan | counted ÷ planned p10 | p50 | p90 | mean error of the plan |`);
console.log('| --- | --- | ---: | ---: | ---: | ---: |');
for (const [name, samples] of Object.entries(streams)) {
  const rng = new SeededRng(7, name);
  const scale = new PromptScale();
  const asEstimated: Errors = { ratios: [] };
  const scaled: Errors = { ratios: [] };
  for (let i = 0; i < REQUESTS; i++) {
    const text = PROMPT_SAMPLES[samples[Math.floor(rng.next() * samples.length)]];
    const copies = 1 + Math.floor(rng.next() * 40);
    const user = Array.from({ length: copies }, () => text).join('\n\n');
    const system = rng.next() < 0.5 ? SYSTEM : '';
    const messages = [
      ...(system === '' ? [] : [{ role: 'system' as const, content: system }]),
      { role: 'user' as const, content: user },
    ];
    const estimate = estimateChatPrompt({ messages });
    const counted = llama31Count(system, user);
    const planned = scale.tokens(estimate.script, estimate.tokens);
    if (i >= WARM) {
      asEstimated.ratios.push(counted / estimate.tokens);
      scaled.ratios.push(counted / planned);
    }
    scale.observe(estimate.script, estimate.tokens, counted);
  }
  console.log(row(name, 'the estimate', asEstimated));
  console.log(row(name, 'scaled', scaled));
  const { latin, other } = scale.lines();
  const line = (l: typeof latin) =>
    `${l.slope} × estimate ${l.intercept < 0 ? '−' : '+'} ${Math.abs(l.intercept)}`;
  console.log(`|  | lines learned: Latin ${line(latin)}; other ${line(other)} |  |  |  |  |`);
}
