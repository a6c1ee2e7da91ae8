/**
 * Calibrates the queue model's predicted wait against the waits requests actually had. The
 * model — the queue ahead over the dispatch rate — is one number for every request of a class,
 * but under flow control a request's wait depends on its size: a short prompt fits next to
 * running decodes and passes the queue, a 2,000-token one waits for a step that can absorb its
 * prefill. So the ratio actual ÷ modelled is learned per class and prompt size (half-octave
 * buckets), and a request's wait is the model's times a percentile of its bucket's ratios: the
 * median for the prediction, a higher one where admission must be sure. Requests that expired
 * in the queue teach with the wait they had reached: a lower bound, and the sample that matters
 * most. Deterministic: windows of recent samples, no clock.
 */
import type { Ms, Tokens } from '../request/units.ts';
import type { SloClassName } from '../request/slo-classes.ts';
import { SortedWindow } from '../stats/sorted-window.ts';

/** Below this a modelled wait is a dispatch tick, and a ratio to it means nothing. */
export const MIN_MODELLED_WAIT_MS = 20;
/** Ratios are kept within these bounds: one stuck request must not rule a bucket. */
const MIN_RATIO = 0.05;
const MAX_RATIO = 20;
/** Buckets per doubling of the prompt: 1,024–1,448 and 1,449–2,047 tokens wait differently. */
const BUCKETS_PER_OCTAVE = 2;
const MAX_BUCKET = 48;

export interface WaitCalibrationParams {
  /** Recent waits kept per class and bucket. */
  readonly window: number;
  /** Samples a bucket needs before its ratios may lower the model's wait (until then ≥ 1). */
  readonly minSamples: number;
  /** The percentile of a bucket's ratios a sure wait is taken at. */
  readonly sureQuantile: number;
}

export const DEFAULT_WAIT_CALIBRATION: WaitCalibrationParams = {
  window: 64,
  minSamples: 16,
  sureQuantile: 90,
};

export interface CalibratedBucket {
  /** The bucket's smallest prompt. */
  readonly from_tokens: Tokens;
  readonly samples: number;
  readonly ratio_p50: number;
  readonly ratio_p90: number;
}

export class WaitCalibration {
  private readonly buckets = new Map<SloClassName, SortedWindow[]>();
  private readonly params: WaitCalibrationParams;

  constructor(params: WaitCalibrationParams = DEFAULT_WAIT_CALIBRATION) {
    this.params = params;
  }

  /** The factor on the modelled wait of a request of `cls` prefilling `promptTokens`: its median. */
  factor(cls: SloClassName, promptTokens: Tokens): number {
    return this.at(cls, promptTokens, 50);
  }

  /** The factor for a wait it will almost surely not exceed: the bucket's sure percentile. */
  sureFactor(cls: SloClassName, promptTokens: Tokens): number {
    return this.at(cls, promptTokens, this.params.sureQuantile);
  }

  /** The least `factor` of any prompt of `cls` prefilling at most `promptTokensAtMost` tokens. */
  leastFactor(cls: SloClassName, promptTokensAtMost: Tokens): number {
    let least = 1; // a bucket without samples
    const byBucket = this.buckets.get(cls);
    if (byBucket === undefined) return least;
    const last = Math.min(byBucket.length - 1, bucketOf(promptTokensAtMost));
    for (let b = 0; b <= last; b++) {
      const w = byBucket[b];
      if (w !== undefined) least = Math.min(least, this.ofWindow(w, 50));
    }
    return least;
  }

  private at(cls: SloClassName, promptTokens: Tokens, q: number): number {
    const w = this.buckets.get(cls)?.[bucketOf(promptTokens)];
    if (w === undefined) return 1;
    return this.ofWindow(w, q);
  }

  private ofWindow(w: SortedWindow, q: number): number {
    const r = w.quantile(q);
    // A bucket with few samples may only make the model more cautious, never bolder.
    return w.size < this.params.minSamples ? Math.max(1, r) : r;
  }

  /** A request modelled to wait `modelledMs` left the queue after `actualMs`. */
  observe(cls: SloClassName, promptTokens: Tokens, modelledMs: Ms, actualMs: Ms): void {
    if (!(modelledMs >= MIN_MODELLED_WAIT_MS) || modelledMs === Infinity) return;
    let byBucket = this.buckets.get(cls);
    if (byBucket === undefined) this.buckets.set(cls, (byBucket = []));
    const w = (byBucket[bucketOf(promptTokens)] ??= new SortedWindow(this.params.window));
    w.add(Math.min(MAX_RATIO, Math.max(MIN_RATIO, actualMs / modelledMs)));
  }

  /** Per class, each learned bucket (for reports). */
  summary(): Partial<Record<SloClassName, CalibratedBucket[]>> {
    const out: Partial<Record<SloClassName, CalibratedBucket[]>> = {};
    const r3 = (x: number) => Math.round(x * 1000) / 1000;
    for (const [cls, byBucket] of this.buckets) {
      const buckets: CalibratedBucket[] = (out[cls] = []);
      byBucket.forEach((w, b) => {
        buckets.push({
          from_tokens: b === 0 ? 0 : Math.ceil(2 ** (b / BUCKETS_PER_OCTAVE)),
          samples: w.size,
          ratio_p50: r3(w.quantile(50)),
          ratio_p90: r3(w.quantile(90)),
        });
      });
    }
    return out;
  }
}

/** Half-octaves of the prompt size: 0 for ≤ 1 token, 20 for 1,024–1,448, 21 for 1,449–2,047. */
function bucketOf(promptTokens: Tokens): number {
  if (promptTokens <= 1) return 0;
  return Math.min(MAX_BUCKET, Math.floor(BUCKETS_PER_OCTAVE * Math.log2(promptTokens)));
}
