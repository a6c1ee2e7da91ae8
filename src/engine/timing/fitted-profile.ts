/**
 * A timing profile fitted from measured operator times (Vidur-style): one step costs CPU
 * overhead + embedding + LM head + layers × (linear ops + prefill attention + decode attention
 * + 2 all-reduces). The formula and its derivation are in ./README.md. Main rule: `stepMs`
 * allocates nothing; every table is turned into typed arrays once, at construction.
 */
import type { Ms } from '../../core/request/units.ts';
import type { StepShape, TimingProfile } from './profile.ts';
import { curveAt, gridAt, makeCurve, makeGrid, type Curve, type Grid } from './curve.ts';
import {
  validateProfileData,
  type CurveData,
  type FittedProfileData,
  type GridData,
  type ProfileCheck,
} from './profile-data.ts';

function toCurve(c: CurveData): Curve {
  return makeCurve(c.x, c.y, c.tail);
}

function toGrid(g: GridData): Grid {
  return makeGrid(g.rows, g.cols, g.v, g.rowTailExponent);
}

export class FittedProfile implements TimingProfile {
  readonly name: string;
  readonly data: FittedProfileData;
  private readonly layers: number;
  private readonly layerLinear: Curve;
  private readonly embedding: Curve;
  private readonly lmHead: Curve;
  private readonly prefill: Grid;
  private readonly prefillScale: number;
  private readonly prefillFloor: number;
  private readonly decode: Grid;
  private readonly decodeBatchPerSeq: number;
  private readonly decodeScale: number;
  private readonly decodeFloor: number;
  private readonly allReduce: Curve | null;
  private readonly customAllReduce: Curve | null;
  private readonly customMaxBytes: number;
  private readonly allReduceBytesPerToken: number;
  private readonly cpuFixed: number;
  private readonly cpuPerSeq: number;
  private readonly computeScale: number;
  private readonly linearFloor: number;

  /**
   * `computeScale` multiplies the compute-bound share of the work (see `calibrated`): 1 runs the
   * profile as fitted; a derived profile's `data.computeScale` holds the factor measured serving
   * gave, which `buildEngineProfile` applies for the engine versions it was measured with.
   */
  constructor(data: FittedProfileData, computeScale = 1) {
    this.name = data.name;
    this.data = data;
    this.layers = data.layers;
    this.layerLinear = toCurve(data.layerLinearMs);
    this.embedding = toCurve(data.embeddingMs);
    this.lmHead = toCurve(data.lmHeadMs);
    const { prefill, decode } = data.attention;
    this.prefill = toGrid(prefill.grid);
    this.prefillScale = prefill.scale;
    // The smallest profiled time is kernel latency, not work: it does not scale with heads or FLOPs.
    this.prefillFloor = Math.min(...prefill.grid.v.flat());
    this.decode = toGrid(decode.grid);
    this.decodeBatchPerSeq = decode.batchPerSeq;
    this.decodeScale = decode.scale;
    this.decodeFloor = Math.min(...decode.grid.v.flat());
    this.allReduce = data.allReduce === null ? null : toCurve(data.allReduce.ms);
    const custom = data.allReduce?.custom;
    this.customAllReduce = custom === undefined ? null : toCurve(custom.ms);
    this.customMaxBytes = custom?.maxBytes ?? 0;
    this.allReduceBytesPerToken = data.allReduce === null ? 0 : data.allReduce.bytesPerToken;
    this.cpuFixed = data.cpuOverhead.fixedMs;
    this.cpuPerSeq = data.cpuOverhead.perSeqMs;
    this.computeScale = computeScale;
    this.linearFloor = curveAt(this.layerLinear, 1);
  }

  /** The same profile with its compute-bound share scaled by `value`. */
  withComputeScale(value: number): FittedProfile {
    return value === this.computeScale ? this : new FittedProfile(this.data, value);
  }

  /** Validates a parsed JSON object; `file` labels errors. */
  static fromJson(raw: unknown, file: string): FittedProfile {
    return new FittedProfile(validateProfileData(raw, file));
  }

  stepMs(s: StepShape): Ms {
    const gpu = this.gpuStepMs(s);
    return gpu > 0 ? gpu + this.cpuOverheadMs(s.prefillSeqs + s.decodeSeqs) : 0;
  }

  /** The step without the host term: what the GPUs compute and communicate. */
  gpuStepMs(s: StepShape): Ms {
    const tokens = s.prefillTokens + s.decodeSeqs;
    if (tokens <= 0) return 0;
    const seqs = s.prefillSeqs + s.decodeSeqs;
    let perLayer =
      this.calibrated(curveAt(this.layerLinear, tokens), this.linearFloor) +
      this.calibrated(this.attnPrefillMs(s.prefillTokens, s.prefillSeqs, s.prefillAttnWork), 0) +
      this.attnDecodeMs(s.decodeSeqs, s.decodeContextTokens);
    if (this.allReduce !== null)
      perLayer += 2 * this.allReduceMs(tokens * this.allReduceBytesPerToken);
    return this.layers * perLayer + this.embeddingMs(tokens) + this.lmHeadMs(seqs);
  }

  /** `ms` with its share above `floorMs` (the compute-bound share) scaled by the calibration. */
  private calibrated(ms: Ms, floorMs: Ms): Ms {
    return this.computeScale === 1 ? ms : floorMs + this.computeScale * (ms - floorMs);
  }

  // Components, exposed for tests and fidelity reports. Per layer unless the name says otherwise.

  layerLinearMs(tokens: number): Ms {
    return curveAt(this.layerLinear, tokens);
  }

  /** Per step: token embedding lookup. */
  embeddingMs(tokens: number): Ms {
    return tokens > 0 ? curveAt(this.embedding, tokens) : 0;
  }

  /** Per step: the vocabulary projection for one logits row per sequence. */
  lmHeadMs(seqs: number): Ms {
    return seqs > 0 ? curveAt(this.lmHead, seqs) : 0;
  }

  /** Per step: the host cost fitted from Vidur's CPU profile (a May-2024 vLLM, serial). */
  cpuOverheadMs(seqs: number): Ms {
    return this.cpuFixed + this.cpuPerSeq * seqs;
  }

  /** NCCL's all-reduce, or vLLM's custom one where it applies and is faster. */
  allReduceMs(bytes: number): Ms {
    if (this.allReduce === null) return 0;
    const nccl = curveAt(this.allReduce, bytes);
    if (this.customAllReduce === null || bytes > this.customMaxBytes) return nccl;
    return Math.min(nccl, curveAt(this.customAllReduce, bytes));
  }

  /** NCCL's all-reduce alone: what the fit's checks compare with. */
  ncclAllReduceMs(bytes: number): Ms {
    return this.allReduce === null ? 0 : curveAt(this.allReduce, bytes);
  }

  /**
   * Prefill attention for `chunks` chunks holding `tokens` prompt tokens with Σ chunk·(cached +
   * chunk) = `work`, treated as equal chunks of tokens/chunks with the chunk-weighted mean cache.
   */
  attnPrefillMs(tokens: number, chunks: number, work: number): Ms {
    if (tokens <= 0) return 0;
    const n = chunks > 0 ? chunks : 1;
    const chunk = tokens / n;
    const cached = Math.max(0, work - tokens * chunk) / tokens;
    const floor = this.prefillFloor;
    return n * (floor + this.prefillScale * (this.sourceAttnPrefillMs(chunk, cached) - floor));
  }

  /** Decode attention for `seqs` sequences holding `contextTokens` tokens of KV in all. */
  attnDecodeMs(seqs: number, contextTokens: number): Ms {
    if (seqs <= 0) return 0;
    const src = gridAt(this.decode, seqs * this.decodeBatchPerSeq, contextTokens / seqs);
    return this.decodeFloor + this.decodeScale * (src - this.decodeFloor);
  }

  /** The attention profile's own shape (Llama-2-70B, TP2, A100), one chunk: the fit before scaling. */
  sourceAttnPrefillMs(chunk: number, cached: number): Ms {
    return gridAt(this.prefill, chunk, cached);
  }

  /** The attention profile's own shape: `batch` sequences of `context` tokens each. */
  sourceAttnDecodeMs(batch: number, context: number): Ms {
    return gridAt(this.decode, batch, context);
  }

  /** What the fit predicts for a recorded check point. */
  predictCheck(c: ProfileCheck): Ms {
    const i = c.input;
    switch (c.component) {
      case 'layer_linear':
        return this.layerLinearMs(i.tokens);
      case 'attn_prefill_source':
        return this.sourceAttnPrefillMs(i.chunk, i.cached);
      case 'attn_decode_source':
        return this.sourceAttnDecodeMs(i.batch, i.context);
      case 'all_reduce':
        return this.ncclAllReduceMs(i.bytes);
      case 'cpu_overhead':
        return this.cpuOverheadMs(i.seqs);
    }
  }
}
