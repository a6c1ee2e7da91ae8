/**
 * Regenerates the trace fixtures cut from raw data: test/fixtures/traces/azure-conv-200.csv is
 * the header and first 200 rows of the Azure 2023 conversation trace (CC-BY-4.0, see that
 * folder's SOURCE.md). The other fixtures there are written by hand.
 *
 *   node scripts/make-fixtures.ts [--data ../shared/data]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const at = args.indexOf('--data');
const dataDir = resolve(root, at >= 0 && args[at + 1] ? args[at + 1] : '../shared/data');
const source = join(dataDir, 'traces/azure2023/AzureLLMInferenceTrace_conv.csv');
const target = join(root, 'test/fixtures/traces/azure-conv-200.csv');

const ROWS = 200;
const lines = readFileSync(source, 'utf8').split('\n');
if (lines[0].trim() !== 'TIMESTAMP,ContextTokens,GeneratedTokens' || lines.length <= ROWS) {
  throw new Error(`${source}: not the Azure conv trace (header ${JSON.stringify(lines[0])})`);
}
const cut = lines.slice(0, ROWS + 1).map((l) => l.replace(/\r$/, ''));
writeFileSync(target, cut.join('\n') + '\n');
console.log(`wrote ${target}: header + ${ROWS} rows`);
