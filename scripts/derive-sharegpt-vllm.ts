/**
 * Derives data/lengths/sharegpt-vllm.json: an approximation of the (prompt tokens, output tokens)
 * pairs that `vllm bench serve --dataset-name sharegpt` draws with the Llama-3 tokenizer. The full
 * ShareGPT V3 file is not at hand, so the table is built from two public pieces:
 *
 * - prompts: ml-energy/leaderboard-v2's 1000 ShareGPT V3 first human turns, tokenized here with
 *   the Llama-3 tokenizer (+1 for the BOS that vLLM's HF tokenizer adds);
 * - outputs: sarathi-serve's per-turn gpt reply lengths (Llama-2 tokens), scaled to Llama-3 tokens
 *   by r = Σ llama3 / Σ llama2 measured on the same prompts (+1 for BOS).
 *
 * Those give the shapes. Neither sample has vLLM's means: ml-energy kept prompts of ≤ 800 Llama-1
 * tokens (vLLM keeps ≤ 1024 Llama-3 tokens), and sarathi's replies are every turn of GPT-4
 * conversations, longer than ShareGPT V3's first replies. So each marginal is then scaled (one
 * factor, lengths rounded) to vLLM's published means for its ShareGPT sample with the Llama-3
 * tokenizer: 215.2 input tokens (1000 prompts, seed 0) and 198.5 output tokens (the most tokens
 * any such run generated without ignoring EOS, a floor on the dataset's own mean).
 *
 * Every output of the pool is used once, in a seeded shuffle, each paired with a prompt drawn from
 * successive seeded permutations of the 1000 prompts; then vLLM's filter is applied (both ≥ 4,
 * prompt ≤ 1024, prompt + output ≤ 2048). Prompt and output lengths are paired independently, so
 * their correlation is not kept. See data/lengths/SOURCE.md.
 *
 *   node scripts/derive-sharegpt-vllm.ts --prompts PATH [--data ../shared/data]
 *
 * PATH is sharegpt/ShareGPT_V3_filtered_1000.json from ml-energy/leaderboard-v2 at PROMPTS_COMMIT.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import llama2Tokenizer from 'llama-tokenizer-js';
import llama3Tokenizer from 'llama3-tokenizer-js';
import { SeededRng } from '../src/runtime/seeded-rng.ts';

const PROMPTS_REPO = 'ml-energy/leaderboard-v2';
const PROMPTS_COMMIT = '30c001fb0faba5bd7970b44f92336778bd3280be';
const PROMPTS_PATH = 'sharegpt/ShareGPT_V3_filtered_1000.json';
/** Git blob id of PROMPTS_PATH at PROMPTS_COMMIT, checked so the table names what it came from. */
const PROMPTS_BLOB = '837d491d0723add8d3ab9117c977baefd5fa3516';
const OUTPUTS_SOURCE =
  'microsoft/sarathi-serve@72339db5b120614033b317880ad3a05a5e4c9415:data/processed_traces/sharegpt_8k_filtered_stats_llama2_tokenizer.csv';
const SEED = 1;
/** vLLM's sample_sharegpt_requests filter (prompt_len, output_len both include BOS). */
const MIN_LEN = 4;
const MAX_PROMPT = 1024;
const MAX_TOTAL = 2048;
/** Published: 1000 prompts, seed 0, Llama-3 tokenizer → 215,196 input tokens. */
const ANCHOR_INPUT_MEAN = 215.196;
/** Published generated totals without --ignore-eos reach 198,532, so the dataset mean is at least this. */
const ANCHOR_OUTPUT_MEAN = 198.532;

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};
const promptsArg = flag('--prompts');
if (promptsArg === undefined) {
  throw new Error(`usage: node scripts/derive-sharegpt-vllm.ts --prompts PATH [--data DIR]`);
}
const promptsPath = resolve(promptsArg);
const dataDir = resolve(root, flag('--data') ?? '../shared/data');
const csvPath = join(
  dataDir,
  'traces/sharegpt-lengths/data/processed_traces/sharegpt_8k_filtered_stats_llama2_tokenizer.csv',
);
const outDir = join(root, 'data/lengths');

// Prompts: check the file is the one named in `source`, then tokenize each first human turn.
const promptBytes = readFileSync(promptsPath);
const blob = createHash('sha1')
  .update(`blob ${promptBytes.length}\0`)
  .update(promptBytes)
  .digest('hex');
if (blob !== PROMPTS_BLOB) {
  throw new Error(`${promptsPath}: git blob ${blob}, expected ${PROMPTS_BLOB} (${PROMPTS_PATH})`);
}
const records = JSON.parse(promptBytes.toString('utf8')) as {
  id: string;
  conversations: { from: string; value: string }[];
}[];
const prompts: number[] = [];
let llama3Sum = 0;
let llama2Sum = 0;
for (const [i, record] of records.entries()) {
  const turn = record.conversations[0];
  if (turn?.from !== 'human' || typeof turn.value !== 'string') {
    throw new Error(`${promptsPath}: record ${i} (${record.id}) has no first human turn`);
  }
  // Both encoders are called without special tokens; vLLM's count adds one BOS.
  const n3 = llama3Tokenizer.encode(turn.value, { bos: false, eos: false }).length;
  const n2 = llama2Tokenizer.encode(turn.value, false).length;
  llama3Sum += n3;
  llama2Sum += n2;
  prompts.push(n3 + 1);
}
const ratio = llama3Sum / llama2Sum;

// Outputs: one gpt reply per CSV row, Llama-2 tokens → Llama-3 tokens, + BOS.
const lines = readFileSync(csvPath, 'utf8').split('\n');
const header = lines[0].trim().split(',');
const outCol = header.indexOf('num_decode_tokens');
if (outCol < 0) throw new Error(`${csvPath}: unexpected header ${lines[0]}`);
const outputs: number[] = [];
for (let i = 1; i < lines.length; i++) {
  const line = lines[i].trim();
  if (line === '') continue;
  const d = Number(line.split(',')[outCol]);
  if (!Number.isInteger(d) || d < 1) {
    throw new Error(`${csvPath}:${i + 1}: expected a positive integer length, got ${line}`);
  }
  outputs.push(Math.max(1, Math.round(d * ratio)) + 1);
}

// Scale: one factor per marginal, found by bisection, so the rounded lengths have the anchor's mean.
const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const scaled = (xs: readonly number[], f: number): number[] =>
  xs.map((x) => Math.max(1, Math.round((x - 1) * f)) + 1);
function scaleTo(xs: readonly number[], target: number): { f: number; values: number[] } {
  let lo = 0.1;
  let hi = 10;
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (mean(scaled(xs, mid)) < target) lo = mid;
    else hi = mid;
  }
  return { f: hi, values: scaled(xs, hi) };
}
const rawPrompts = prompts;
const rawOutputs = outputs;
const inputScale = scaleTo(rawPrompts, ANCHOR_INPUT_MEAN);
const outputScale = scaleTo(rawOutputs, ANCHOR_OUTPUT_MEAN);

// Pairing: a seeded shuffle of the whole output pool; prompts come from successive seeded
// permutations, so each prompt is used ⌊n/1000⌋ or ⌈n/1000⌉ times. Then vLLM's filter.
const rng = new SeededRng(SEED, 'sharegpt-vllm');
const shuffle = (xs: number[]): number[] => {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rng.next() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
};
const pool = shuffle([...outputScale.values]);
const input: number[] = [];
const output: number[] = [];
let order: number[] = [];
for (let k = 0; k < pool.length; k++) {
  if (k % rawPrompts.length === 0) order = shuffle(rawPrompts.map((_, i) => i));
  const p = inputScale.values[order[k % rawPrompts.length]];
  const o = pool[k];
  if (p < MIN_LEN || o < MIN_LEN || p > MAX_PROMPT || p + o > MAX_TOTAL) continue;
  input.push(p);
  output.push(o);
}

mkdirSync(outDir, { recursive: true });
const json =
  '{\n' +
  `  "source": "input: ${PROMPTS_REPO}@${PROMPTS_COMMIT}:${PROMPTS_PATH}; output: ${OUTPUTS_SOURCE}",\n` +
  '  "tokenizer": "llama-3",\n' +
  '  "columns": "input[i] and output[i] are the prompt and output tokens of row i, both with BOS as vLLM counts them; input from a real first human turn, output from a gpt reply in Llama-3 tokens, each marginal scaled to vLLM\'s published mean (inputScale, outputScale), paired independently",\n' +
  `  "rows": ${input.length},\n` +
  `  "seed": ${SEED},\n` +
  `  "llama3PerLlama2": ${ratio.toFixed(6)},\n` +
  `  "inputScale": ${inputScale.f.toFixed(6)},\n` +
  `  "outputScale": ${outputScale.f.toFixed(6)},\n` +
  `  "input": [${input.join(',')}],\n` +
  `  "output": [${output.join(',')}]\n` +
  '}\n';
const outPath = join(outDir, 'sharegpt-vllm.json');
writeFileSync(outPath, json);

/** Linear interpolation between order statistics (numpy's default). */
const quantile = (xs: readonly number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  const h = (s.length - 1) * q;
  const lo = Math.floor(h);
  return s[lo] + (h - lo) * ((s[Math.min(lo + 1, s.length - 1)] ?? s[lo]) - s[lo]);
};
const describe = (xs: readonly number[]): string =>
  `mean ${mean(xs).toFixed(1)}, median ${quantile(xs, 0.5).toFixed(1)}, p90 ${quantile(xs, 0.9).toFixed(1)}`;
const off = (x: number, anchor: number): string =>
  `${x >= anchor ? '+' : ''}${((x / anchor - 1) * 100).toFixed(1)}%`;

console.log(
  `prompts: ${prompts.length}, Llama-3 tokens ${llama3Sum}, Llama-2 tokens ${llama2Sum} (no BOS); ` +
    `r = ${ratio.toFixed(4)}`,
);
console.log(`  prompt lengths (+BOS): ${describe(rawPrompts)}; scaled ×${inputScale.f.toFixed(4)}`);
console.log(
  `outputs: ${rawOutputs.length} replies (Llama-3 tokens, +BOS): ${describe(rawOutputs)}; ` +
    `scaled ×${outputScale.f.toFixed(4)}`,
);
console.log(
  `pairs: ${pool.length} drawn, ${input.length} kept by vLLM's filter ` +
    `(${pool.length - input.length} dropped)`,
);
console.log(`  input:  ${describe(input)}`);
console.log(`  output: ${describe(output)}`);
console.log(
  `anchors: input mean ${mean(input).toFixed(1)} vs 215.2 (${off(mean(input), ANCHOR_INPUT_MEAN)}); ` +
    `output mean ${mean(output).toFixed(1)} vs 198.5 (${off(mean(output), ANCHOR_OUTPUT_MEAN)})`,
);
console.log(`wrote ${outPath}: ${input.length} pairs, ${json.length} bytes`);
