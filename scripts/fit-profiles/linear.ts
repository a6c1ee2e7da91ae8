/**
 * Fits the token-proportional part of a step: per-layer linear ops, embedding and LM head, as
 * non-decreasing piecewise-linear curves over tokens. For a model with no H100 profile (Llama-3)
 * each op's A100 time is multiplied by the H100 ÷ A100 ratio of the same op in a Llama-2 model.
 * Main rule: every curve is checked against the rows it came from, and the checks are recorded.
 */
import type { ModelSpec } from '../../src/engine/hardware.ts';
import { curveAt, makeCurve } from '../../src/engine/timing/curve.ts';
import type { CurveData, ProfileCheck } from '../../src/engine/timing/profile-data.ts';
import { opMedian } from './csv.ts';
import { LAYER_OPS, layerSum, opRatio, rowAt, type Op, type OpTable } from './op-table.ts';
import { errorStats, isotonic, sig, tailSlope, typicalIndex, type ErrorStats } from './stats.ts';

export interface LinearInputs {
  readonly model: ModelSpec;
  /** The model's own profile: on the target GPU, or on A100 when `ref` is given. */
  readonly base: OpTable;
  /** A reference model profiled on both GPUs, to carry `base` from A100 to H100. */
  readonly ref?: { readonly name: string; readonly a100: OpTable; readonly h100: OpTable };
}

export interface LinearFit {
  readonly layerLinearMs: CurveData;
  readonly embeddingMs: CurveData;
  readonly lmHeadMs: CurveData;
  readonly fitError: Record<string, ErrorStats>;
  readonly checks: ProfileCheck[];
  readonly method: string;
}

const CHECKS = 40;

function curve(x: number[], raw: number[]): CurveData {
  const y = isotonic(raw);
  return { x, y: y.map((v) => sig(v)), tail: { kind: 'linear', slope: sig(tailSlope(x, y)) } };
}

/**
 * About `count` of `candidates` (ascending), evenly spread in log space, each moved to the most
 * typical of its near neighbours by `values` (see typicalIndex).
 */
export function logSpread(
  candidates: readonly number[],
  values: readonly number[],
  count: number,
): number[] {
  const lo = Math.log(candidates[0]);
  const hi = Math.log(candidates[candidates.length - 1]);
  const picked = new Set<number>();
  for (let t = 0; t < count; t++) {
    const target = lo + ((hi - lo) * t) / (count - 1);
    let best = 0;
    candidates.forEach((c, i) => {
      if (Math.abs(Math.log(c) - target) < Math.abs(Math.log(candidates[best]) - target)) best = i;
    });
    picked.add(candidates[typicalIndex(values, best)]);
  }
  return [...picked].sort((a, b) => a - b);
}

export function fitLinear({ model, base, ref }: LinearInputs): LinearFit {
  const n = base.n;
  const op = (o: Op, i: number) =>
    base.ops[o][i] * (ref ? opRatio(ref.a100, ref.h100, o, n[i]) : 1);
  const layerRaw = n.map((_, i) => LAYER_OPS.reduce((s, o) => s + op(o, i), 0));
  // The LM head is a GEMM like mlp_up_proj over the same rows, with `vocab` outputs instead of 2·ffn.
  const lmFactor = model.vocab / (2 * model.ffn);
  const fit = {
    layerLinearMs: curve(n, layerRaw),
    embeddingMs: curve(
      n,
      n.map((_, i) => op('emb', i)),
    ),
    lmHeadMs: curve(
      n,
      n.map((_, i) => op('mlp_up_proj', i) * lmFactor),
    ),
  };
  const layer = makeCurve(fit.layerLinearMs.x, fit.layerLinearMs.y, fit.layerLinearMs.tail);
  let fitError: Record<string, ErrorStats>;
  const checks: ProfileCheck[] = [];
  if (ref === undefined) {
    fitError = {
      layerLinear: errorStats(
        base.rows.map((r) => curveAt(layer, r.num('num_tokens'))),
        base.rows.map(layerSum),
      ),
    };
    for (const k of logSpread(n, layerRaw, CHECKS)) {
      const row = rowAt(base, k)!;
      checks.push({
        component: 'layer_linear',
        input: { tokens: k },
        expectedMs: sig(layerSum(row), 6),
        source: `${base.file.cite}:L${row.line}`,
        note: 'Σ of the 9 per-layer op medians',
      });
    }
  } else {
    const refTop = ref.a100.n[ref.a100.n.length - 1];
    const inRef = n.map((k, i) => i).filter((i) => n[i] <= refTop);
    fitError = {
      layerLinearVsDerived: errorStats(
        inRef.map((i) => curveAt(layer, n[i])),
        inRef.map((i) => layerRaw[i]),
      ),
    };
    const shared = n
      .map((k, i) => i)
      .filter((i) => n[i] <= refTop && rowAt(ref.a100, n[i]) && rowAt(ref.h100, n[i]));
    const sharedN = shared.map((i) => n[i]);
    for (const k of logSpread(
      sharedN,
      shared.map((i) => layerRaw[i]),
      CHECKS,
    )) {
      const [b, a, h] = [rowAt(base, k)!, rowAt(ref.a100, k)!, rowAt(ref.h100, k)!];
      const expected = LAYER_OPS.reduce((s, o) => {
        const ra = opMedian(a, o);
        return s + opMedian(b, o) * (ra > 0 ? opMedian(h, o) / ra : 1);
      }, 0);
      checks.push({
        component: 'layer_linear',
        input: { tokens: k },
        expectedMs: sig(expected, 6),
        source: `${base.file.cite}:L${b.line} × ${ref.h100.file.cite}:L${h.line} ÷ ${ref.a100.file.cite}:L${a.line}`,
        note: 'derived: Σ over the 9 ops of A100 op × (H100 op ÷ A100 op of the reference model)',
      });
    }
  }
  return { ...fit, fitError, checks, method: linearMethod(model, base, ref) };
}

function linearMethod(model: ModelSpec, base: OpTable, ref: LinearInputs['ref']): string {
  const top = base.n[base.n.length - 1];
  const own = ref
    ? `Linear ops per layer: for each of the 9 ops, the A100 median of ${base.file.cite} (TP ${base.tp}) times the ` +
      `H100 ÷ A100 ratio of the same op, TP and num_tokens in ${ref.name} (${ref.h100.file.cite} ÷ ` +
      `${ref.a100.file.cite}); past ${ref.a100.n[ref.a100.n.length - 1]} tokens the ratio over the reference's top eighth ` +
      `(compute-bound) holds. No ${model.name} H100 profile exists; fitError.derivationCrossCheck shows how well this ` +
      `method predicts a measured H100 table.`
    : `Linear ops per layer: Σ of the 9 per-layer op medians (${LAYER_OPS.join(', ')}) of ${base.file.cite} at TP ${base.tp}.`;
  return (
    `${own} Duplicate num_tokens rows are folded by median; each curve is made non-decreasing (isotonic regression), ` +
    `interpolated piecewise-linearly over tokens and extended past ${top} tokens by the slope of its top quarter. ` +
    `Embedding: the emb op, once per step over all tokens. LM head: mlp_up_proj over one row per sequence × ` +
    `vocab/(2·ffn) = ${(model.vocab / (2 * model.ffn)).toFixed(3)} (both GEMMs read hidden-wide rows; only the output ` +
    `width differs, so time scales with it when memory- and when compute-bound).`
  );
}

/**
 * How well "A100 × reference H100/A100 ratio" predicts a table that was measured: the held-out
 * model's H100 linear-op sums, predicted from its A100 table and the other model's ratios.
 */
export function derivationCrossCheck(
  heldA100: OpTable,
  heldH100: OpTable,
  refA100: OpTable,
  refH100: OpTable,
): ErrorStats {
  const ns = heldH100.n.filter((k) => heldA100.n.includes(k));
  const at = (t: OpTable, o: Op, k: number) => t.ops[o][t.n.indexOf(k)];
  return errorStats(
    ns.map((k) =>
      LAYER_OPS.reduce((s, o) => s + at(heldA100, o, k) * opRatio(refA100, refH100, o, k), 0),
    ),
    ns.map((k) => LAYER_OPS.reduce((s, o) => s + at(heldH100, o, k), 0)),
  );
}

/** A100 time ÷ H100 time of the Llama-2-7B TP1 linear ops: at 1 token (memory-bound) and ≥ 3584 (compute-bound). */
export function gpuSpeedups(
  a100: OpTable,
  h100: OpTable,
): { memoryBound: number; computeBound: number } {
  const sum = (t: OpTable, keep: (k: number) => boolean) =>
    t.n.reduce((s, k, i) => (keep(k) ? s + LAYER_OPS.reduce((u, o) => u + t.ops[o][i], 0) : s), 0);
  return {
    memoryBound: sig(sum(a100, (k) => k === 1) / sum(h100, (k) => k === 1), 4),
    computeBound: sig(sum(a100, (k) => k >= 3584) / sum(h100, (k) => k >= 3584), 4),
  };
}
