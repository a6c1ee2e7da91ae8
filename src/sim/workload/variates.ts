/**
 * Continuous random variates drawn from an injected Rng: exponential, standard normal, gamma.
 * Each sampler is a closure with its constants precomputed, because the workload draws one per
 * request and a million requests must take well under a second. Uniforms are taken as 1 − u so
 * they lie in (0, 1] and never reach log(0).
 */
import type { Rng } from '../../core/ports/rng.ts';

export type Sampler = () => number;

export function exponentialSampler(rng: Rng, mean: number): Sampler {
  return () => -mean * Math.log(1 - rng.next());
}

/** Box–Muller; the second value of each pair is kept for the next call, so no uniform is wasted. */
export function normalSampler(rng: Rng): Sampler {
  let spare = 0;
  let hasSpare = false;
  return () => {
    if (hasSpare) {
      hasSpare = false;
      return spare;
    }
    const r = Math.sqrt(-2 * Math.log(1 - rng.next()));
    const theta = 2 * Math.PI * rng.next();
    spare = r * Math.sin(theta);
    hasSpare = true;
    return r * Math.cos(theta);
  };
}

/**
 * Gamma(shape, scale) by Marsaglia & Tsang (2000), "A simple method for generating gamma
 * variables". For shape < 1 it samples Gamma(shape + 1) and multiplies by U^(1/shape), the boost
 * the paper gives, since the squeeze needs shape ≥ 1. Shape 1 is the exponential, drawn directly
 * so a gamma process with burstiness 1 is the very same stream as a Poisson one.
 */
export function gammaSampler(rng: Rng, shape: number, scale: number): Sampler {
  if (!(shape > 0) || !Number.isFinite(shape)) throw new RangeError(`gamma shape ${shape}`);
  if (shape === 1) return exponentialSampler(rng, scale);
  const boost = shape < 1;
  const d = (boost ? shape + 1 : shape) - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  const invShape = 1 / shape;
  const normal = normalSampler(rng);
  return () => {
    let v: number;
    for (;;) {
      const x = normal();
      v = 1 + c * x;
      if (v <= 0) continue;
      v = v * v * v;
      const u = 1 - rng.next();
      const x2 = x * x;
      if (u < 1 - 0.0331 * x2 * x2) break;
      if (Math.log(u) < 0.5 * x2 + d * (1 - v + Math.log(v))) break;
    }
    const g = d * v;
    return (boost ? g * Math.pow(1 - rng.next(), invShape) : g) * scale;
  };
}

/** Index k in [0, count) with probability ∝ (k + 1)^−exponent (Zipf; exponent 0 is uniform). */
export function zipfSampler(count: number, exponent: number, rng: Rng): Sampler {
  const cumulative = new Float64Array(count);
  let total = 0;
  for (let k = 0; k < count; k++) {
    total += Math.pow(k + 1, -exponent);
    cumulative[k] = total;
  }
  return () => {
    const u = rng.next() * total;
    // First k with cumulative[k] > u.
    let lo = 0;
    let hi = count - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cumulative[mid] > u) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
}
