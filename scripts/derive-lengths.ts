/**
 * Derives data/lengths/sharegpt.json from the raw ShareGPT length trace (sarathi-serve's
 * sharegpt_8k_filtered_stats_llama2_tokenizer.csv) so Goodput works from a clone without it.
 * Keeps every (prompt, output) pair in file order: 30,731 pairs fit in ~300 kB, so nothing is
 * binned and the joint distribution is exact.
 *
 *   node scripts/derive-lengths.ts [--data ../shared/data]
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const at = args.indexOf('--data');
const dataDir = resolve(root, at >= 0 && args[at + 1] ? args[at + 1] : '../shared/data');
const srcDir = join(dataDir, 'traces/sharegpt-lengths');
const csvPath = join(
  srcDir,
  'data/processed_traces/sharegpt_8k_filtered_stats_llama2_tokenizer.csv',
);
const outDir = join(root, 'data/lengths');

const lines = readFileSync(csvPath, 'utf8').split('\n');
const header = lines[0].trim().split(',');
const inCol = header.indexOf('num_prefill_tokens');
const outCol = header.indexOf('num_decode_tokens');
if (inCol < 0 || outCol < 0) throw new Error(`${csvPath}: unexpected header ${lines[0]}`);

const input: number[] = [];
const output: number[] = [];
for (let i = 1; i < lines.length; i++) {
  const line = lines[i].trim();
  if (line === '') continue;
  const cells = line.split(',');
  const p = Number(cells[inCol]);
  const d = Number(cells[outCol]);
  if (!Number.isInteger(p) || !Number.isInteger(d) || p < 1 || d < 1) {
    throw new Error(`${csvPath}:${i + 1}: expected positive integer lengths, got ${line}`);
  }
  input.push(p);
  output.push(d);
}

mkdirSync(outDir, { recursive: true });
const json =
  '{\n' +
  '  "source": "microsoft/sarathi-serve@72339db5b120614033b317880ad3a05a5e4c9415:data/processed_traces/sharegpt_8k_filtered_stats_llama2_tokenizer.csv",\n' +
  '  "tokenizer": "llama-2",\n' +
  '  "columns": "input[i] and output[i] are the prompt and output tokens of row i (num_prefill_tokens, num_decode_tokens)",\n' +
  `  "rows": ${input.length},\n` +
  `  "input": [${input.join(',')}],\n` +
  `  "output": [${output.join(',')}]\n` +
  '}\n';
writeFileSync(join(outDir, 'sharegpt.json'), json);
// Written, not copied, so the copy does not inherit the read-only mode of the shared data.
writeFileSync(join(outDir, 'LICENSE-sharegpt-lengths'), readFileSync(join(srcDir, 'LICENSE')));

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
console.log(
  `wrote ${join(outDir, 'sharegpt.json')}: ${input.length} pairs, ` +
    `input mean ${mean(input).toFixed(1)}, output mean ${mean(output).toFixed(1)}, ${json.length} bytes`,
);
