/**
 * The on-disk form of a fitted timing profile (data/profiles/<model>-<gpu>-tp<N>.json, written by
 * scripts/fit-profiles.ts) and its validation. Main rule: a malformed file fails at load with the
 * file and the dotted field named; nothing is defaulted.
 */
import type { CurveTail } from './curve.ts';

export const PROFILE_SCHEMA = 'goodput.timing-profile/1';

export interface CurveData {
  readonly x: number[];
  readonly y: number[];
  readonly tail: CurveTail;
}

export interface GridData {
  readonly rows: number[];
  readonly cols: number[];
  /** v[i][j] is the value at rows[i], cols[j]. */
  readonly v: number[][];
  /** Past the last row, values grow as (row / last row)^rowTailExponent. */
  readonly rowTailExponent: number;
}

export type CheckComponent =
  'layer_linear' | 'attn_prefill_source' | 'attn_decode_source' | 'all_reduce' | 'cpu_overhead';

/** A source row the fit must reproduce; `input` names the component's arguments. */
export interface ProfileCheck {
  readonly component: CheckComponent;
  readonly input: Readonly<Record<string, number>>;
  readonly expectedMs: number;
  /** Source file(s) and 1-based line numbers (header = line 1). */
  readonly source: string;
  readonly note?: string;
}

export interface FittedProfileData {
  readonly schema: typeof PROFILE_SCHEMA;
  readonly name: string;
  readonly model: string;
  readonly gpu: string;
  readonly tp: number;
  readonly layers: number;
  readonly method: string;
  readonly source: Readonly<Record<string, unknown>>;
  /** Per layer per GPU, over tokens in the step: every non-attention op of a transformer block. */
  readonly layerLinearMs: CurveData;
  /** Once per step, over tokens in the step. */
  readonly embeddingMs: CurveData;
  /** Once per step, over sequences in the step (one logits row each). */
  readonly lmHeadMs: CurveData;
  readonly attention: {
    /** Source-shape time of one chunk over (chunk tokens, tokens already cached). */
    readonly prefill: { readonly grid: GridData; readonly scale: number };
    /** Source-shape time over (batch, per-sequence context). */
    readonly decode: {
      readonly grid: GridData;
      readonly batchPerSeq: number;
      readonly scale: number;
    };
  };
  readonly allReduce: null | {
    readonly bytesPerToken: number;
    /** NCCL's all-reduce over message size. */
    readonly ms: CurveData;
    /** vLLM's custom all-reduce, used up to `maxBytes` where it is faster than NCCL. */
    readonly custom?: {
      readonly maxBytes: number;
      readonly ms: CurveData;
      readonly source: string;
    };
  };
  readonly cpuOverhead: { readonly fixedMs: number; readonly perSeqMs: number };
  /**
   * A derived profile's calibration against measured serving: the compute-bound share of linear
   * ops (above their one-token time) and prefill attention take `value` times as long when the
   * replica runs one of `engineVersions` (whose kernels the measurement was made with).
   */
  readonly computeScale?: {
    readonly value: number;
    readonly engineVersions: readonly string[];
    readonly source: string;
  };
  readonly fitError: Readonly<Record<string, unknown>>;
  readonly checks: ProfileCheck[];
}

const COMPONENTS: readonly string[] = [
  'layer_linear',
  'attn_prefill_source',
  'attn_decode_source',
  'all_reduce',
  'cpu_overhead',
];

class Reader {
  readonly file: string;
  constructor(file: string) {
    this.file = file;
  }
  fail(path: string, expected: string, got: unknown): never {
    const shown =
      got === null
        ? 'null'
        : Array.isArray(got)
          ? 'an array'
          : typeof got === 'object'
            ? 'an object'
            : String(JSON.stringify(got));
    throw new Error(`${this.file}: ${path}: expected ${expected}, got ${shown}`);
  }
  obj(v: unknown, path: string): Record<string, unknown> {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) this.fail(path, 'an object', v);
    return v as Record<string, unknown>;
  }
  num(v: unknown, path: string, min = 0): number {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min)
      this.fail(path, `a finite number ≥ ${min}`, v);
    return v;
  }
  str(v: unknown, path: string): string {
    if (typeof v !== 'string' || v.length === 0) this.fail(path, 'a non-empty string', v);
    return v;
  }
  strs(v: unknown, path: string): string[] {
    if (!Array.isArray(v) || v.length === 0) this.fail(path, 'a non-empty array of strings', v);
    v.forEach((x, i) => this.str(x, `${path}[${i}]`));
    return v as string[];
  }
  calibration(v: unknown): NonNullable<FittedProfileData['computeScale']> {
    const o = this.obj(v, 'computeScale');
    return {
      value: this.num(o.value, 'computeScale.value', Number.MIN_VALUE),
      engineVersions: this.strs(o.engineVersions, 'computeScale.engineVersions'),
      source: this.str(o.source, 'computeScale.source'),
    };
  }
  nums(v: unknown, path: string, minLength: number, increasing: boolean): number[] {
    if (!Array.isArray(v) || v.length < minLength)
      this.fail(path, `an array of ≥ ${minLength} numbers`, v);
    v.forEach((x, i) => {
      this.num(x, `${path}[${i}]`);
      if (increasing && i > 0 && x <= v[i - 1])
        this.fail(`${path}[${i}]`, `a value > ${v[i - 1]}`, x);
    });
    return v as number[];
  }
  curve(v: unknown, path: string): CurveData {
    const o = this.obj(v, path);
    const x = this.nums(o.x, `${path}.x`, 2, true);
    const y = this.nums(o.y, `${path}.y`, 2, false);
    if (y.length !== x.length)
      this.fail(`${path}.y`, `${x.length} values (as many as x)`, y.length);
    const t = this.obj(o.tail, `${path}.tail`);
    if (t.kind === 'linear')
      return { x, y, tail: { kind: 'linear', slope: this.num(t.slope, `${path}.tail.slope`) } };
    if (t.kind === 'power')
      return {
        x,
        y,
        tail: { kind: 'power', exponent: this.num(t.exponent, `${path}.tail.exponent`) },
      };
    return this.fail(`${path}.tail.kind`, '"linear" or "power"', t.kind);
  }
  grid(v: unknown, path: string): GridData {
    const o = this.obj(v, path);
    const rows = this.nums(o.rows, `${path}.rows`, 2, true);
    const cols = this.nums(o.cols, `${path}.cols`, 2, true);
    if (!Array.isArray(o.v) || o.v.length !== rows.length)
      this.fail(`${path}.v`, `${rows.length} rows`, o.v);
    const vals = o.v.map((row: unknown, i: number) => {
      const r = this.nums(row, `${path}.v[${i}]`, cols.length, false);
      if (r.length !== cols.length) this.fail(`${path}.v[${i}]`, `${cols.length} values`, r.length);
      return r;
    });
    return {
      rows,
      cols,
      v: vals,
      rowTailExponent: this.num(o.rowTailExponent, `${path}.rowTailExponent`),
    };
  }
  check(v: unknown, path: string): ProfileCheck {
    const o = this.obj(v, path);
    if (typeof o.component !== 'string' || !COMPONENTS.includes(o.component))
      this.fail(`${path}.component`, COMPONENTS.join(' | '), o.component);
    const input = this.obj(o.input, `${path}.input`);
    for (const [k, x] of Object.entries(input)) this.num(x, `${path}.input.${k}`);
    return {
      component: o.component as CheckComponent,
      input: input as Record<string, number>,
      expectedMs: this.num(o.expectedMs, `${path}.expectedMs`, Number.MIN_VALUE),
      source: this.str(o.source, `${path}.source`),
      ...(o.note === undefined ? {} : { note: this.str(o.note, `${path}.note`) }),
    };
  }
}

/** Checks a parsed profile JSON; `file` only labels errors. */
export function validateProfileData(raw: unknown, file: string): FittedProfileData {
  const r: Reader = new Reader(file);
  const o = r.obj(raw, '(root)');
  if (o.schema !== PROFILE_SCHEMA) r.fail('schema', JSON.stringify(PROFILE_SCHEMA), o.schema);
  const att = r.obj(o.attention, 'attention');
  const pre = r.obj(att.prefill, 'attention.prefill');
  const dec = r.obj(att.decode, 'attention.decode');
  const cpu = r.obj(o.cpuOverhead, 'cpuOverhead');
  let allReduce: FittedProfileData['allReduce'] = null;
  if (o.allReduce !== null) {
    const ar = r.obj(o.allReduce, 'allReduce');
    allReduce = {
      bytesPerToken: r.num(ar.bytesPerToken, 'allReduce.bytesPerToken', 1),
      ms: r.curve(ar.ms, 'allReduce.ms'),
    };
    if (ar.custom !== undefined) {
      const c = r.obj(ar.custom, 'allReduce.custom');
      allReduce = {
        ...allReduce,
        custom: {
          maxBytes: r.num(c.maxBytes, 'allReduce.custom.maxBytes', 1),
          ms: r.curve(c.ms, 'allReduce.custom.ms'),
          source: r.str(c.source, 'allReduce.custom.source'),
        },
      };
    }
  }
  const tp = r.num(o.tp, 'tp', 1);
  if (!Number.isInteger(tp)) r.fail('tp', 'an integer ≥ 1', tp);
  if (tp > 1 && allReduce === null) r.fail('allReduce', 'an all-reduce table when tp > 1', null);
  const checks = o.checks;
  if (!Array.isArray(checks)) r.fail('checks', 'an array', checks);
  return {
    schema: PROFILE_SCHEMA,
    name: r.str(o.name, 'name'),
    model: r.str(o.model, 'model'),
    gpu: r.str(o.gpu, 'gpu'),
    tp,
    layers: r.num(o.layers, 'layers', 1),
    method: r.str(o.method, 'method'),
    source: r.obj(o.source, 'source'),
    layerLinearMs: r.curve(o.layerLinearMs, 'layerLinearMs'),
    embeddingMs: r.curve(o.embeddingMs, 'embeddingMs'),
    lmHeadMs: r.curve(o.lmHeadMs, 'lmHeadMs'),
    attention: {
      prefill: {
        grid: r.grid(pre.grid, 'attention.prefill.grid'),
        scale: r.num(pre.scale, 'attention.prefill.scale'),
      },
      decode: {
        grid: r.grid(dec.grid, 'attention.decode.grid'),
        batchPerSeq: r.num(dec.batchPerSeq, 'attention.decode.batchPerSeq', Number.MIN_VALUE),
        scale: r.num(dec.scale, 'attention.decode.scale'),
      },
    },
    allReduce,
    cpuOverhead: {
      fixedMs: r.num(cpu.fixedMs, 'cpuOverhead.fixedMs'),
      perSeqMs: r.num(cpu.perSeqMs, 'cpuOverhead.perSeqMs'),
    },
    ...(o.computeScale === undefined ? {} : { computeScale: r.calibration(o.computeScale) }),
    fitError: r.obj(o.fitError, 'fitError'),
    checks: checks.map((c: unknown, i: number) => r.check(c, `checks[${i}]`)),
  };
}
