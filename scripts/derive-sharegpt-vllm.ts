/**
 * Derives data/lengths/sharegpt-vllm.json: an approximation of the (prompt tokens, output tokens)
 * pairs that `vllm bench serve --dataset-name sharegpt` draws with the Llama-3 tokenizer. The full
 * ShareGPT V3 file is not at hand, so the table is built from public pieces:
 *
 * - prompts: ml-energy/leaderboard-v2's 1000 ShareGPT V3 first human turns, tokenized here with
 *   the Llama-3 tokenizer (+1 for the BOS that vLLM's HF tokenizer adds), then scaled by one
 *   factor to vLLM's published mean of 215.2 tokens (1000 prompts, seed 0): ml-energy kept
 *   prompts of ≤ 800 Llama-1 tokens, so the sample lacks the long tail vLLM keeps;
 * - outputs: no public per-request source of ShareGPT V3 first replies was at hand, so they are
 *   a log-normal fitted to two published statistics of vLLM's sample: the median, 118 tokens
 *   (from SGLang's vLLM 0.6.0 runs, which force every ShareGPT output length: (median E2E −
 *   median TTFT) / median TPOT + 1 over its four online runs) and the mean, 198.5 tokens (the
 *   most tokens any vLLM run without --ignore-eos generated from the 1000-prompt sample).
 *
 * Outputs are placed at evenly spaced quantiles and shuffled with a seeded generator; each is
 * paired with a prompt drawn from successive seeded permutations of the 1000 prompts; then
 * vLLM's filter is applied (both ≥ 4, prompt ≤ 1024, prompt + output ≤ 2048), and σ is set by
 * bisection so the kept outputs have the published mean. Prompt and output lengths are paired
 * independently, so their correlation is not kept. See data/lengths/SOURCE.md.
 *
 *   node scripts/derive-sharegpt-vllm.ts --prompts PATH
 *
 * PATH is sharegpt/ShareGPT_V3_filtered_1000.json from ml-energy/leaderboard-v2 at PROMPTS_COMMIT.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import llama3Tokenizer from 'llama3-tokenizer-js';
import { SeededRng } from '../src/runtime/seeded-rng.ts';

const PROMPTS_REPO = 'ml-energy/leaderboard-v2';
const PROMPTS_COMMIT = '30c001fb0faba5bd7970b44f92336778bd3280be';
const PROMPTS_PATH = 'sharegpt/ShareGPT_V3_filtered_1000.json';
/** Git blob id of PROMPTS_PATH at PROMPTS_COMMIT, checked so the table names what it came from. */
const PROMPTS_BLOB = '837d491d0723add8d3ab9117c977baefd5fa3516';
const SEED = 1;
/** Outputs in the table: as many as keep 30 draws per prompt. */
const PAIRS = 30_000;
/** vLLM's sample_sharegpt_requests filter (prompt_len, output_len both include BOS). */
const MIN_LEN = 4;
const MAX_PROMPT = 1024;
const MAX_TOTAL = 2048;
/** Published: 1000 prompts, seed 0, Llama-3 tokenizer → 215,196 input tokens. */
const ANCHOR_INPUT_MEAN = 215.196;
/** Published generated totals without --ignore-eos reach 198,532 for the same sample. */
const ANCHOR_OUTPUT_MEAN = 198.532;
/**
 * SGLang's vLLM 0.6.0 runs (sgl-project/sglang@120affb:benchmark/benchmark_vllm_060/README.md)
 * force each ShareGPT output length; (median E2E − median TTFT) / median TPOT + 1 gives 113.6,
 * 119.0, 117.0 and 122.6 tokens over its four online runs.
 */
const ANCHOR_OUTPUT_MEDIAN = (113.6 + 119.0 + 117.0 + 122.6) / 4;

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const at = args.indexOf('--prompts');
if (at < 0 || args[at + 1] === undefined) {
  throw new Error('usage: node scripts/derive-sharegpt-vllm.ts --prompts PATH');
}
const promptsPath = resolve(args[at + 1]);
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
const rawPrompts = records.map((record, i) => {
  const turn = record.conversations[0];
  if (turn?.from !== 'human' || typeof turn.value !== 'string') {
    throw new Error(`${promptsPath}: record ${i} (${record.id}) has no first human turn`);
  }
  // Encoded without special tokens (the package's plain encode adds BOS and EOS); vLLM's count
  // has one BOS.
  return llama3Tokenizer.encode(turn.value, { bos: false, eos: false }).length + 1;
});

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

/** The lowest x in [lo, hi] with f(x) ≥ target, f non-decreasing. */
function bisect(f: (x: number) => number, target: number, lo: number, hi: number): number {
  let a = lo;
  let b = hi;
  for (let i = 0; i < 60; i++) {
    const mid = (a + b) / 2;
    if (f(mid) < target) a = mid;
    else b = mid;
  }
  return b;
}

// Inputs: one factor on the length without BOS, rounded.
const scalePrompts = (f: number): number[] =>
  rawPrompts.map((x) => Math.max(1, Math.round((x - 1) * f)) + 1);
const inputScale = bisect((f) => mean(scalePrompts(f)), ANCHOR_INPUT_MEAN, 0.1, 10);
const prompts = scalePrompts(inputScale);

/** Φ⁻¹(p), Acklam's rational approximation (relative error < 1.2e-9). */
function normalQuantile(p: number): number {
  const a = [
    -39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716,
    2.506628277459239,
  ];
  const b = [
    -54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972,
    -13.28068155288572,
  ];
  const c = [
    -0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734,
    4.374664141464968, 2.938163982698783,
  ];
  const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
  const tail = (q: number): number =>
    (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
    ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  if (p < 0.02425) return tail(Math.sqrt(-2 * Math.log(p)));
  if (p > 1 - 0.02425) return -tail(Math.sqrt(-2 * Math.log(1 - p)));
  const q = p - 0.5;
  const r = q * q;
  return (
    ((((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q) /
    (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
  );
}

/** The table for output spread σ: seeded pairs of (prompt, log-normal output), vLLM's filter applied. */
function build(sigma: number): { input: number[]; output: number[] } {
  const rng = new SeededRng(SEED, 'sharegpt-vllm');
  const shuffle = (xs: number[]): number[] => {
    for (let i = xs.length - 1; i > 0; i--) {
      const j = Math.floor(rng.next() * (i + 1));
      [xs[i], xs[j]] = [xs[j], xs[i]];
    }
    return xs;
  };
  const mu = Math.log(ANCHOR_OUTPUT_MEDIAN);
  const pool = shuffle(
    Array.from({ length: PAIRS }, (_, k) =>
      Math.max(1, Math.round(Math.exp(mu + sigma * normalQuantile((k + 0.5) / PAIRS)))),
    ),
  );
  const input: number[] = [];
  const output: number[] = [];
  let order: number[] = [];
  for (let k = 0; k < pool.length; k++) {
    if (k % prompts.length === 0) order = shuffle(prompts.map((_, i) => i));
    const p = prompts[order[k % prompts.length]];
    const o = pool[k];
    if (p < MIN_LEN || o < MIN_LEN || p > MAX_PROMPT || p + o > MAX_TOTAL) continue;
    input.push(p);
    output.push(o);
  }
  return { input, output };
}

const sigma = bisect((s) => mean(build(s).output), ANCHOR_OUTPUT_MEAN, 0.1, 3);
const { input, output } = build(sigma);

mkdirSync(outDir, { recursive: true });
const json =
  '{\n' +
  `  "source": "input: ${PROMPTS_REPO}@${PROMPTS_COMMIT}:${PROMPTS_PATH}, scaled to vLLM's published mean; output: log-normal fitted to vLLM's published mean and SGLang's published medians (see data/lengths/SOURCE.md)",\n` +
  '  "tokenizer": "llama-3",\n' +
  '  "columns": "input[i] and output[i] are the prompt and output tokens of row i, both with BOS as vLLM counts them, paired independently",\n' +
  `  "rows": ${input.length},\n` +
  `  "seed": ${SEED},\n` +
  `  "inputScale": ${inputScale.toFixed(6)},\n` +
  `  "outputLogMedian": ${Math.log(ANCHOR_OUTPUT_MEDIAN).toFixed(6)},\n` +
  `  "outputLogSigma": ${sigma.toFixed(6)},\n` +
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
  `mean ${mean(xs).toFixed(1)}, median ${quantile(xs, 0.5).toFixed(1)}, p90 ${quantile(xs, 0.9).toFixed(1)}, max ${Math.max(...xs)}`;

console.log(`prompts: ${rawPrompts.length}, Llama-3 tokens + BOS: ${describe(rawPrompts)}`);
console.log(
  `  scaled ×${inputScale.toFixed(4)} to the published mean ${ANCHOR_INPUT_MEAN.toFixed(1)}`,
);
console.log(
  `outputs: log-normal, median ${ANCHOR_OUTPUT_MEDIAN.toFixed(1)}, σ ${sigma.toFixed(4)} ` +
    `for the published mean ${ANCHOR_OUTPUT_MEAN.toFixed(1)} after the filter`,
);
console.log(`pairs: ${PAIRS} drawn, ${input.length} kept by vLLM's filter`);
console.log(`  input:  ${describe(input)}`);
console.log(`  output: ${describe(output)}`);
console.log(`wrote ${outPath}: ${input.length} pairs, ${json.length} bytes`);
