/**
 * Prints what a fit run produced: error statistics per profile and the step times a reader can
 * hold against real serving numbers (a 1,024-token prefill, decode steps at context 1,024),
 * with the raw source sums those times are built from.
 */
import { MODELS } from '../../src/engine/hardware.ts';
import type { FittedProfile } from '../../src/engine/timing/fitted-profile.ts';
import type { StepShape } from '../../src/engine/timing/profile.ts';
import { layerSum, rowAt, type OpTable } from './op-table.ts';

interface SummaryContext {
  readonly speedup: { memoryBound: number; computeBound: number };
  readonly out: string;
  readonly tables: (gpu: string, model: string, tp: number) => OpTable;
}

const prefill = (tokens: number): StepShape => ({
  prefillTokens: tokens,
  prefillSeqs: 1,
  prefillAttnWork: tokens * tokens,
  decodeSeqs: 0,
  decodeContextTokens: 0,
});
const decode = (seqs: number, context: number): StepShape => ({
  prefillTokens: 0,
  prefillSeqs: 0,
  prefillAttnWork: 0,
  decodeSeqs: seqs,
  decodeContextTokens: seqs * context,
});

function stat(p: FittedProfile, key: string): string {
  const s = p.data.fitError[key] as { mapePct: number; maxPct: number } | undefined;
  return s ? `${s.mapePct.toFixed(1)}/${s.maxPct.toFixed(0)}` : '-';
}

export function printSummary(profiles: FittedProfile[], ctx: SummaryContext): void {
  console.log(
    `wrote ${profiles.length} profiles to ${ctx.out}; H100 speed-up over A100: ${JSON.stringify(ctx.speedup)}`,
  );
  console.log(
    'fit error, MAPE%/max% — step ms: 1k prefill, decode at context 1k with 1 / 32 / 128 sequences',
  );
  console.log(
    'profile'.padEnd(22) +
      ['linear', 'attnPre', 'attnDec', 'allRed≥1M', 'cpu', 'pre1k', 'dec1', 'dec32', 'dec128']
        .map((h) => h.padStart(10))
        .join(''),
  );
  for (const p of profiles) {
    const lin = p.data.fitError.layerLinear ? 'layerLinear' : 'layerLinearVsDerived';
    const cells = [
      stat(p, lin),
      stat(p, 'attnPrefillSource'),
      stat(p, 'attnDecodeSource'),
      stat(p, 'allReduceFrom1MiB'),
      stat(p, 'cpuOverhead'),
      ...[prefill(1024), decode(1, 1024), decode(32, 1024), decode(128, 1024)].map((s) =>
        p.stepMs(s).toFixed(2),
      ),
    ];
    console.log(p.name.padEnd(22) + cells.map((c) => c.padStart(10)).join(''));
  }
  const p = profiles.find((q) => q.name === 'llama-3-8b/a100/tp1');
  if (p === undefined) return;
  const layers = MODELS['llama-3-8b'].layers;
  const t = ctx.tables('a100', 'llama-3-8b', 1);
  console.log('\nllama-3-8b/a100/tp1, one sequence:');
  for (const [label, shape, tokens] of [
    ['1,024-token prefill (TTFT on an idle replica)', prefill(1024), 1024],
    ['decode step at context 1,024', decode(1, 1024), 1],
  ] as const) {
    const row = rowAt(t, tokens)!;
    const attn =
      p.attnPrefillMs(shape.prefillTokens, shape.prefillSeqs, shape.prefillAttnWork) +
      p.attnDecodeMs(shape.decodeSeqs, shape.decodeContextTokens);
    console.log(`  ${label}: ${p.stepMs(shape).toFixed(2)} ms`);
    console.log(
      `    source: Σ 9 mlp.csv ops at num_tokens=${tokens} (L${row.line}) = ${layerSum(row).toFixed(4)} ms × ${layers} layers = ` +
        `${(layerSum(row) * layers).toFixed(2)} ms`,
    );
    console.log(
      `    fit: linear ${(p.layerLinearMs(tokens) * layers).toFixed(2)} + attention ${(attn * layers).toFixed(2)} ` +
        `(${attn.toFixed(4)}/layer) + embedding ${p.embeddingMs(tokens).toFixed(3)} + LM head ${p.lmHeadMs(1).toFixed(3)} ` +
        `+ CPU ${p.cpuOverheadMs(1).toFixed(3)} ms`,
    );
  }
}
