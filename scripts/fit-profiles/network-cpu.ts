/**
 * Fits the two parts of a step that do not depend on the model: tensor-parallel all-reduce time
 * over message size (one DGX node, all workers on NVLink) and the serving engine's CPU overhead
 * per step over the number of sequences. Main rule: below 1 MiB the all-reduce profile is
 * latency noise (the same size reads 0.01 or 0.06 ms), so the curve is a running median and
 * its checks cite rows of 2.8 MiB and more.
 */
import { curveAt, makeCurve } from '../../src/engine/timing/curve.ts';
import type { CurveData, ProfileCheck } from '../../src/engine/timing/profile-data.ts';
import { readCsv } from './csv.ts';
import type { SourceFile } from './sources.ts';
import {
  errorStats,
  fitLine,
  isotonic,
  median,
  sig,
  tailSlope,
  typicalIndex,
  type ErrorStats,
} from './stats.ts';

const MiB = 1024 * 1024;
const STEPS_PER_OCTAVE = 8;
const MIN_WINDOW_ROWS = 7;

export interface AllReduceFit {
  readonly ms: CurveData;
  readonly fitError: Record<string, ErrorStats>;
  readonly checks: ProfileCheck[];
}

export function fitAllReduce(file: SourceFile, workers: number): AllReduceFit {
  const rows = readCsv(file.local)
    .rows.filter((r) => r.num('num_workers') === workers && r.num('devices_per_node') === workers)
    .map((r) => ({ size: r.num('size'), y: r.num('time_stats.all_reduce.median'), r }))
    .sort((a, b) => a.size - b.size);
  if (rows.length === 0)
    throw new Error(`${file.local}: no rows for ${workers} workers on one node`);
  const lo = rows[0].size;
  const hi = rows[rows.length - 1].size;
  const x: number[] = [];
  const raw: number[] = [];
  for (let i = 0; lo * 2 ** (i / STEPS_PER_OCTAVE) <= hi * 1.0001; i++) {
    const s = Math.min(hi, Math.round(lo * 2 ** (i / STEPS_PER_OCTAVE)));
    // Median of the rows within ±1/8 octave, widened to the nearest few where rows are sparse.
    const byDistance = [...rows].sort(
      (a, b) => Math.abs(Math.log(a.size / s)) - Math.abs(Math.log(b.size / s)),
    );
    const near = byDistance.filter((p) => Math.abs(Math.log2(p.size / s)) <= 1 / STEPS_PER_OCTAVE);
    const window = near.length >= MIN_WINDOW_ROWS ? near : byDistance.slice(0, MIN_WINDOW_ROWS);
    if (x.length > 0 && x[x.length - 1] >= s) continue;
    x.push(s);
    raw.push(median(window.map((p) => p.y)));
  }
  const y = isotonic(raw);
  const ms: CurveData = {
    x,
    y: y.map((v) => sig(v)),
    tail: { kind: 'linear', slope: sig(tailSlope(x, y)) },
  };
  const c = makeCurve(ms.x, ms.y, ms.tail);
  const big = rows.filter((p) => p.size >= MiB);
  const checks: ProfileCheck[] = [];
  // Half-octave points from 2.8 MiB: up to ~2 MiB a size reads either of two latencies, and
  // sizes of exactly 2^k MiB take a faster NCCL path than their neighbours.
  for (const target of [1.5, 2.5, 3.5, 4.5, 5.5, 6].map((k) => 2 ** k * MiB)) {
    const nearest = big.reduce(
      (b, q, i) => (Math.abs(q.size - target) < Math.abs(big[b].size - target) ? i : b),
      0,
    );
    const p =
      big[
        typicalIndex(
          big.map((q) => q.y),
          nearest,
          2,
          4,
        )
      ];
    checks.push({
      component: 'all_reduce',
      input: { bytes: p.size },
      expectedMs: sig(p.y, 6),
      source: `${file.cite}:L${p.r.line}`,
      note: `all_reduce median, ${workers} workers on one node`,
    });
  }
  return {
    ms,
    fitError: {
      allReduce: errorStats(
        rows.map((p) => curveAt(c, p.size)),
        rows.map((p) => p.y),
      ),
      allReduceFrom1MiB: errorStats(
        big.map((p) => curveAt(c, p.size)),
        big.map((p) => p.y),
      ),
    },
    checks,
  };
}

export interface CpuFit {
  readonly fixedMs: number;
  readonly perSeqMs: number;
  readonly fitError: Record<string, ErrorStats>;
  readonly checks: ProfileCheck[];
  readonly method: string;
}

/** Vidur's CPU overhead minus Ray's RPC time (vLLM on one node no longer drives workers through Ray). */
const CPU_PARTS = ['schedule', 'sampler_e2e', 'prepare_inputs_e2e', 'process_model_outputs'];

export function fitCpuOverhead(file: SourceFile): CpuFit {
  const rows = readCsv(file.local).rows.map((r) => ({
    b: r.num('batch_size'),
    y: CPU_PARTS.reduce((s, p) => s + r.num(`${p}_median`), 0),
    r,
  }));
  const { a, b } = fitLine(
    rows.map((p) => p.b),
    rows.map((p) => p.y),
  );
  const fixedMs = sig(Math.max(0, a), 4);
  const perSeqMs = sig(Math.max(0, b), 4);
  const checks: ProfileCheck[] = [8, 32, 64, 96, 128].map((batch) => {
    const p = rows.find((q) => q.b === batch)!;
    return {
      component: 'cpu_overhead',
      input: { seqs: batch },
      expectedMs: sig(p.y, 6),
      source: `${file.cite}:L${p.r.line}`,
      note: `${CPU_PARTS.map((s) => `${s}_median`).join(' + ')}`,
    };
  });
  const model = rows[0].r.str('model_name');
  const method =
    `CPU overhead per step: fixedMs + perSeqMs × (prefillSeqs + decodeSeqs), a relative-error least-squares line ` +
    `through ${CPU_PARTS.map((s) => `${s}_median`).join(' + ')} of ${file.cite} (${model}, TP2, batch 8–128), applied ` +
    `to every model, GPU and TP: these are host-side costs of the serving engine, not of the model. Vidur also adds ` +
    `ray_comm_time; it is left out because vLLM drives single-node workers without Ray.`;
  return {
    fixedMs,
    perSeqMs,
    fitError: {
      cpuOverhead: errorStats(
        rows.map((p) => fixedMs + perSeqMs * p.b),
        rows.map((p) => p.y),
      ),
    },
    checks,
    method,
  };
}

/**
 * vLLM's custom all-reduce (vllm/distributed/device_communicators/custom_all_reduce.py: one
 * node, NVLink, 2–8 GPUs, messages up to 8 MiB): latency in ms by message size in bytes, measured
 * on H100 and published with the comparison in SGLang's pull request. No A100 measurement was
 * found, so A100 profiles keep NCCL's curve alone.
 */
const CUSTOM_ALL_REDUCE_SOURCE =
  'https://github.com/sgl-project/sglang/pull/2904, "vllm" table, H100 without CUDA graphs';
const CUSTOM_ALL_REDUCE_MAX_BYTES = 8 * 1024 * 1024;
const CUSTOM_ALL_REDUCE_BYTES = [512, 4096, 32768, 262144, 524288, 1048576];
const CUSTOM_ALL_REDUCE: Record<string, Record<number, number[]>> = {
  h100: {
    2: [0.0095, 0.0088, 0.0087, 0.0129, 0.0177, 0.0266],
    4: [0.0091, 0.0085, 0.0092, 0.0206, 0.0269, 0.0402],
    8: [0.0101, 0.0093, 0.0118, 0.0241, 0.0304, 0.045],
  },
};

/** vLLM's custom all-reduce for `tp` GPUs of this kind, when it was measured there. */
export function customAllReduce(
  gpu: string,
  tp: number,
): { maxBytes: number; ms: CurveData; source: string } | undefined {
  const measured = CUSTOM_ALL_REDUCE[gpu]?.[tp];
  if (measured === undefined) return undefined;
  // Made non-decreasing (a bigger message never reduces faster), then linear past 1 MiB.
  const y = isotonic(measured);
  const n = y.length;
  const x = CUSTOM_ALL_REDUCE_BYTES;
  return {
    maxBytes: CUSTOM_ALL_REDUCE_MAX_BYTES,
    ms: {
      x,
      y,
      tail: { kind: 'linear', slope: sig((y[n - 1] - y[n - 2]) / (x[n - 1] - x[n - 2])) },
    },
    source: CUSTOM_ALL_REDUCE_SOURCE,
  };
}
