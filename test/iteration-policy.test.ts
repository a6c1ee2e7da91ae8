// The engine's iteration-time cap: a burst of 16K-token prompts on Llama 3.1 8B (H100) while 48
// streams decode. Unchunked (vLLM 0.6's whole-prompt steps) the streams stall for seconds; V1's
// default chunking still gives steps of ~8K prompt tokens (~0.3 s gaps); with --max-iteration-ms
// 60 every gap stays within the 80 ms an interactive stream is promised, and the burst is still
// served, its first tokens later (smaller chunks).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './helpers.ts';
import type { ScenarioSpec } from '../src/sim/scenario.ts';
import { tempDir } from './temp-dir.ts';

const dir = tempDir('burst');
const trace = join(dir, 'burst.jsonl');
const rows = [
  ...Array.from({ length: 48 }, (_, i) => ({
    t_ms: i * 20,
    input_tokens: 200,
    output_tokens: 1_500,
  })),
  ...Array.from({ length: 8 }, (_, i) => ({
    t_ms: 5_000 + i,
    input_tokens: 16_000,
    output_tokens: 50,
  })),
];
writeFileSync(trace, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');

const burst = (engine: Partial<ScenarioSpec>) =>
  run({ trace, model: 'llama-3.1-8b', gpu: 'h100', classes: 'batch', ...engine });

test('a burst of 16K-token prompts: the iteration-time cap keeps every token gap under 80 ms; unchunked and default-chunked steps do not', () => {
  const unchunked = burst({ engineVersion: 'vllm-0.6', chunkedPrefill: false });
  const chunked = burst({ engineVersion: 'vllm-v1' });
  const capped = burst({ engineVersion: 'vllm-v1', maxIterationMs: 60 });
  for (const r of [unchunked, chunked, capped]) assert.equal(r.completed, rows.length);
  const worst = (r: typeof capped) => r.latency_ms.max_stall.max;
  assert.ok(worst(unchunked) > 1_000, `unchunked: worst gap ${worst(unchunked)} ms`);
  assert.ok(worst(chunked) > 200, `V1 default chunks: worst gap ${worst(chunked)} ms`);
  assert.ok(worst(capped) < 80, `capped: worst gap ${worst(capped)} ms`);
  assert.ok(capped.latency_ms.itl.p99 < 80);
  // The prompts still go through, at the price of their own first tokens: smaller chunks.
  const ttft = (r: typeof capped) => r.latency_ms.ttft.max;
  assert.ok(
    ttft(capped) < 3 * ttft(chunked),
    `TTFT max: capped ${ttft(capped)}, default chunks ${ttft(chunked)}`,
  );
});

test('the iteration-time cap and the chunk threshold are refused without chunked prefill', () => {
  assert.throws(
    () => burst({ engineVersion: 'vllm-0.6', chunkedPrefill: false, maxIterationMs: 60 }),
    /maxIterationMs/,
  );
  assert.throws(
    () =>
      burst({ engineVersion: 'vllm-0.6', chunkedPrefill: false, longPrefillTokenThreshold: 512 }),
    /longPrefillTokenThreshold/,
  );
});

test('a decode budget under the iteration-time cap: batch decodes yield the step to interactive prefills', () => {
  // Llama 3 70B on four H100s, 30% interactive and 70% batch (1K–3K-token prompts), priority
  // scheduling and a 70 ms iteration cap. Without a decode budget, hundreds of batch decodes fill
  // the capped step and an interactive prompt prefills 64 tokens at a time; with 32 decodes a
  // step (interactive first), the rest of the step prefills.
  const mix: Partial<ScenarioSpec> = {
    model: 'llama-3-70b',
    tp: 4,
    rate: 10,
    numRequests: 1_500,
    input: 'uniform:1000:3000',
    output: 'uniform:100:600',
    classes: 'interactive:0.3,batch:0.7',
    schedulingPolicy: 'priority',
    maxIterationMs: 70,
  };
  const open = run(mix);
  const budgeted = run({ ...mix, decodeTokenBudget: 32 });
  const interactive = (r: typeof open) => r.slo.by_class.interactive;
  assert.ok(interactive(open).attainment_offered < 0.9, 'first tokens late behind batch decodes');
  assert.ok(interactive(budgeted).attainment_offered > interactive(open).attainment_offered + 0.1);
  assert.equal(budgeted.slo.by_class.batch.attainment_offered, 1, 'batch still within its hour');
  assert.ok((budgeted.engine.decodes_deferred ?? 0) > 0);
  assert.equal(open.engine.decodes_deferred, undefined, 'reported only with a budget');
});
