/**
 * Synthetic arrival times with `vllm bench serve` semantics. Gaps are drawn from
 * Gamma(shape = burstiness, scale = 1 / (rate · burstiness)), so the mean rate is `rate` whatever
 * the burstiness (1 is Poisson, below 1 burstier, above 1 smoother). Arrival i is the sum of the
 * first i + 1 gaps, and, as vLLM does, all arrivals are rescaled so the last lands at exactly
 * N / rate: runs with different seeds then offer the same load. The rescale needs the sum of all
 * gaps up front, so the gaps are drawn twice from two identical forks of one stream rather than
 * held in memory.
 */
import type { Rng } from '../../core/ports/rng.ts';
import type { Ms } from '../../core/request/units.ts';
import { gammaSampler, type Sampler } from './variates.ts';

export interface ArrivalProcess {
  /** Mean requests per second; Infinity sends every request at time 0. */
  readonly rateRps: number;
  /** Gamma shape; Infinity gives evenly spaced arrivals. */
  readonly burstiness: number;
  readonly count: number;
}

/** Returns a function that yields the next arrival time (ms) on each call, `count` times. */
export function arrivalClock(process: ArrivalProcess, stream: () => Rng): () => Ms {
  const { rateRps, burstiness, count } = process;
  if (rateRps === Infinity) return () => 0;
  const gaps = (): Sampler =>
    burstiness === Infinity
      ? () => 1 / rateRps
      : gammaSampler(stream(), burstiness, 1 / (rateRps * burstiness));

  const first = gaps();
  let total = 0;
  for (let i = 0; i < count; i++) total += first();
  const msPerUnit = total > 0 ? ((count / rateRps) * 1000) / total : 0;

  const draw = gaps();
  let t = 0;
  return () => {
    t += draw();
    return t * msPerUnit;
  };
}
