/**
 * How good the door's predictions turned out, for run reports: how often a request's output
 * exceeded its predicted p90 (the KV reservation), and the distribution of TTFT errors
 * (actual − predicted, so positive means the prediction was optimistic). The summary is plain
 * JSON with no NaN: an empty tracker reports zeros.
 */
import { FloatList } from '../stats/float-list.ts';
import { percentileSorted } from '../stats/percentile.ts';
import type { Ms, Tokens } from '../request/units.ts';

export interface PredictionErrorsSummary {
  readonly output: { readonly samples: number; readonly over_p90_rate: number };
  readonly ttft: {
    readonly samples: number;
    /** Share of requests whose first token came later than predicted. */
    readonly under_predicted_rate: number;
    readonly error_ms: {
      readonly p50: number;
      readonly p90: number;
      readonly p99: number;
      readonly mean: number;
    };
    readonly abs_error_ms_p50: number;
  };
}

export class PredictionErrors {
  private outputSamples = 0;
  private overP90 = 0;
  private readonly ttftErrors = new FloatList();
  private underPredicted = 0;

  recordOutput(predictedP90: Tokens, actual: Tokens): void {
    finite('recordOutput', predictedP90, actual);
    this.outputSamples++;
    if (actual > predictedP90) this.overP90++;
  }

  recordTtft(predictedMs: Ms, actualMs: Ms): void {
    finite('recordTtft', predictedMs, actualMs);
    const error = actualMs - predictedMs;
    this.ttftErrors.push(error);
    if (error > 0) this.underPredicted++;
  }

  summary(): PredictionErrorsSummary {
    const errors = this.ttftErrors.values();
    const n = errors.length;
    const sorted = Float64Array.from(errors).sort();
    const abs = Float64Array.from(errors, Math.abs).sort();
    let sum = 0;
    for (let i = 0; i < n; i++) sum += errors[i];
    return {
      output: {
        samples: this.outputSamples,
        over_p90_rate: rate(this.overP90, this.outputSamples),
      },
      ttft: {
        samples: n,
        under_predicted_rate: rate(this.underPredicted, n),
        error_ms: {
          p50: ms(percentileSorted(sorted, 50)),
          p90: ms(percentileSorted(sorted, 90)),
          p99: ms(percentileSorted(sorted, 99)),
          mean: ms(n === 0 ? 0 : sum / n),
        },
        abs_error_ms_p50: ms(percentileSorted(abs, 50)),
      },
    };
  }
}

// A NaN recorded here would surface only at the end of a run, as null in the report.
function finite(where: string, a: number, b: number): void {
  if (!Number.isFinite(a) || !Number.isFinite(b)) {
    throw new RangeError(`PredictionErrors.${where}: expected finite numbers, got ${a}, ${b}`);
  }
}

function rate(count: number, total: number): number {
  return total === 0 ? 0 : round(count / total, 1e6);
}

/** Empty percentiles (NaN) read as 0 so the report stays valid JSON. */
function ms(x: number): number {
  return Number.isNaN(x) ? 0 : round(x, 1e3);
}

function round(x: number, scale: number): number {
  // `+ 0` turns −0 (a tiny negative error rounded away) into 0, so reports never show "-0".
  return Math.round(x * scale) / scale + 0;
}
