/**
 * The part of a trace to replay and its clock. The window [startS, startS + durationS) is cut
 * in trace seconds before any rate scaling, so a window names the same requests at every scale;
 * then times are re-based to the window's start and divided by `rateScale` (2 replays the
 * window twice as fast).
 */
import { ConfigError } from '../../../core/errors.ts';
import type { Ms } from '../../../core/request/units.ts';
import { WORKLOAD_FLAGS } from '../workload-options.ts';

export interface TraceWindow {
  /** Rows [from, to) of the sorted table. */
  readonly from: number;
  readonly to: number;
  readonly startMs: Ms;
  /** Infinity when the window runs to the end of the trace. */
  readonly endMs: Ms;
}

/** `tMs` is ascending and starts at 0. Throws ConfigError when the window holds no request. */
export function selectWindow(
  tMs: Float64Array,
  startS: number,
  durationS: number | undefined,
): TraceWindow {
  const startMs = startS * 1000;
  const endMs = durationS === undefined ? Infinity : startMs + durationS * 1000;
  const from = lowerBound(tMs, startMs);
  const to = endMs === Infinity ? tMs.length : lowerBound(tMs, endMs);
  if (to <= from) {
    const spanS = tMs.length > 0 ? tMs[tMs.length - 1] / 1000 : 0;
    const flag = startMs > tMs[tMs.length - 1] ? WORKLOAD_FLAGS.startS : WORKLOAD_FLAGS.durationS;
    const window = `[${startS}, ${durationS === undefined ? '∞' : startS + durationS}) s`;
    throw new ConfigError(
      flag,
      `a window that holds requests (the trace spans 0–${spanS} s)`,
      window,
    );
  }
  return { from, to, startMs, endMs };
}

/** Arrival time on the simulator's clock of a row at trace time `tMs`. */
export function scaledArrival(tMs: Ms, window: TraceWindow, rateScale: number): Ms {
  return (tMs - window.startMs) / rateScale;
}

/** First index whose time is ≥ `t`. */
function lowerBound(tMs: Float64Array, t: number): number {
  let lo = 0;
  let hi = tMs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (tMs[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
