// One fidelity point: llama-3-8b on A100 at batch 1 — the simulated TTFT of a 1,024-token prompt
// and the per-token decode time, measured end to end through the simulator, next to the raw
// per-operator times they come from (Vidur's mlp.csv, when ../shared/data is present).
//   node bench/fidelity.ts [--data ../shared/data]
import { existsSync } from 'node:fs';
import { DATA_DIR } from './bench-args.ts';
import { runScenario, SCENARIO_DEFAULTS } from '../src/sim/scenario.ts';
import { loadPolicy } from '../src/sim/policy-source.ts';
import { opMedian, readCsv } from '../scripts/fit-profiles/csv.ts';
import { LAYER_OPS } from '../scripts/fit-profiles/op-table.ts';

const data = DATA_DIR;

const report = runScenario(
  {
    ...SCENARIO_DEFAULTS,
    seed: 1,
    model: 'llama-3-8b',
    gpu: 'a100',
    input: 'fixed:1024',
    output: 'fixed:128',
    numRequests: 1,
    rate: 1,
  },
  loadPolicy('baseline-vllm'),
  { wallClock: { now: () => 0 } },
);
console.log(
  `simulated TTFT, 1,024-token prompt, idle replica: ${report.latency_ms.ttft.mean.toFixed(2)} ms`,
);
console.log(
  `simulated TPOT (decode step at batch 1, context 1,024–1,152): ${report.latency_ms.tpot.mean.toFixed(2)} ms`,
);

const csv = `${data}/profiles/vidur/compute/a100/meta-llama/Meta-Llama-3-8B/mlp.csv`;
if (!existsSync(csv)) {
  console.log(`(raw source not found at ${csv}; pass --data)`);
} else {
  const { rows } = readCsv(csv);
  for (const tokens of [1024, 1]) {
    const row = rows.find(
      (r) => r.num('num_tokens') === tokens && r.num('num_tensor_parallel_workers') === 1,
    );
    if (row === undefined) continue;
    const perLayer = LAYER_OPS.reduce((s, op) => s + opMedian(row, op), 0);
    console.log(
      `source: Σ per-layer linear/norm ops at num_tokens=${tokens}, TP1 (mlp.csv line ${row.line}) = ${perLayer.toFixed(4)} ms × 32 layers = ${(perLayer * 32).toFixed(2)} ms (before attention, embedding, LM head, CPU overhead)`,
    );
  }
}
