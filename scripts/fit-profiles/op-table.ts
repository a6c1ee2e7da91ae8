/**
 * Vidur's mlp.csv as a table: per-layer, per-GPU op times (median) over num_tokens at one TP
 * degree, with duplicate rows for the same num_tokens folded by their median. Main rule: the
 * file must describe the model we think it does (heads, KV heads, hidden and FFN are checked).
 */
import type { ModelSpec } from '../../src/engine/hardware.ts';
import { opMedian, readCsv, type CsvRow } from './csv.ts';
import type { SourceFile } from './sources.ts';
import { median } from './stats.ts';

/** Every op of a transformer block that mlp.csv times: all but attention itself and the all-reduces. */
export const LAYER_OPS = [
  'input_layernorm',
  'attn_pre_proj',
  'attn_rope',
  'attn_post_proj',
  'post_attention_layernorm',
  'mlp_up_proj',
  'mlp_act',
  'mlp_down_proj',
  'add',
] as const;

export const ALL_OPS = [...LAYER_OPS, 'emb'] as const;
export type Op = (typeof ALL_OPS)[number];

export interface OpTable {
  readonly file: SourceFile;
  readonly tp: number;
  /** num_tokens, increasing. */
  readonly n: number[];
  readonly ops: Readonly<Record<Op, number[]>>;
  /** Every source row at this TP, in file order. */
  readonly rows: CsvRow[];
}

export function layerSum(row: CsvRow): number {
  return LAYER_OPS.reduce((s, op) => s + opMedian(row, op), 0);
}

export function readOpTable(file: SourceFile, model: ModelSpec, tp: number): OpTable {
  const csv = readCsv(file.local);
  const rows = csv.rows.filter((r) => r.num('num_tensor_parallel_workers') === tp);
  if (rows.length === 0) throw new Error(`${file.local}: no rows at TP ${tp}`);
  const expect: [string, number][] = [
    ['n_head', model.heads],
    ['n_kv_head', model.kvHeads],
    ['n_embd', model.hidden],
    ['n_expanded_embd', model.ffn],
  ];
  // vocab_size is not compared: Vidur pads Llama-2's 32,000 to 32,768; it only sizes the embedding lookup.
  for (const [col, want] of expect) {
    if (rows[0].num(col) !== want)
      throw new Error(`${file.local}: ${col} is ${rows[0].num(col)}, ${model.name} has ${want}`);
  }
  if (rows[0].str('use_gated_mlp') !== 'True')
    throw new Error(`${file.local}: expected a gated MLP`);
  const byN = new Map<number, CsvRow[]>();
  for (const r of rows) {
    const n = r.num('num_tokens');
    byN.set(n, [...(byN.get(n) ?? []), r]);
  }
  const n = [...byN.keys()].sort((a, b) => a - b);
  const ops = Object.fromEntries(
    ALL_OPS.map((op) => [op, n.map((k) => median(byN.get(k)!.map((r) => opMedian(r, op))))]),
  ) as Record<Op, number[]>;
  return { file, tp, n, ops, rows };
}

/** An op's time at any num_tokens inside the table, interpolated linearly. */
export function opAt(t: OpTable, op: Op, n: number): number {
  const xs = t.n;
  const ys = t.ops[op];
  if (n <= xs[0]) return ys[0];
  let i = 1;
  while (i < xs.length - 1 && xs[i] < n) i++;
  if (n >= xs[xs.length - 1]) return ys[ys.length - 1];
  return ys[i - 1] + ((n - xs[i - 1]) / (xs[i] - xs[i - 1])) * (ys[i] - ys[i - 1]);
}

/** The first source row at exactly `n` tokens. */
export function rowAt(t: OpTable, n: number): CsvRow | undefined {
  return t.rows.find((r) => r.num('num_tokens') === n);
}

/**
 * H100 time ÷ A100 time of one op at `n` tokens, from a reference model profiled on both.
 * Past the reference table the ratio of its top eighth holds (the compute-bound regime).
 */
export function opRatio(refA100: OpTable, refH100: OpTable, op: Op, n: number): number {
  const top = refA100.n[refA100.n.length - 1];
  if (n <= top) return opAt(refH100, op, n) / opAt(refA100, op, n);
  const sum = (t: OpTable) => t.n.reduce((s, k, i) => (k >= top * 0.875 ? s + t.ops[op][i] : s), 0);
  return sum(refH100) / sum(refA100);
}
