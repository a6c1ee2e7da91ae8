/**
 * How many slow token gaps a streaming request can absorb and still meet its p99 gap objective.
 * A request's p99 is taken over its own n gaps with numpy's linear interpolation, so the top
 * ~1% of gaps are (almost) free: a 300-token answer shrugs off two slow steps, a 50-token one
 * only a mild one. The dispatcher uses this to decide whether a long prompt may run its prefill
 * next to a replica's active decodes.
 */
import type { Ms } from '../request/units.ts';
import type { LengthCdf } from '../fleet/replica-ledger.ts';

/**
 * p99 of n gaps of which `slow` are `slowMs` and the rest `fastMs` (slowMs ≥ fastMs), exactly as
 * the percentile of that multiset is computed.
 */
export function p99WithSlowGaps(n: number, slow: number, fastMs: Ms, slowMs: Ms): Ms {
  if (n <= 0) return 0;
  if (slow <= 0) return fastMs;
  if (slow >= n) return slowMs;
  const h = 0.99 * (n - 1);
  const lo = Math.floor(h);
  const hi = Math.min(lo + 1, n - 1);
  const firstSlow = n - slow;
  const at = (i: number) => (i >= firstSlow ? slowMs : fastMs);
  return at(lo) + (h - lo) * (at(hi) - at(lo));
}

const SPARE_TABLE: number[] = [];

/**
 * Fewest gaps a stream must have for `slow` slow gaps to sit wholly above its p99's
 * interpolation points (so they cannot raise it): the smallest n with
 * slow ≤ n − 2 − ⌊0.99(n − 1)⌋ — 102 for one, 202 for two.
 */
export function gapsToSpare(slow: number): number {
  if (slow <= 0) return 0;
  if (SPARE_TABLE.length === 0) {
    let need = 1;
    for (let n = 2; need <= 32; n++) {
      while (need <= 32 && need <= n - 2 - Math.floor(0.99 * (n - 1))) SPARE_TABLE[need++] = n;
    }
  }
  return slow <= 32 ? SPARE_TABLE[slow] : Infinity;
}

/**
 * Probability that a stream which has produced `streamed` tokens ends before it can spare
 * `slow` slow gaps: P(length < gapsToSpare(slow) + 1 | length ≥ streamed), from the lengths its
 * class and tenant have shown. Without that history, or when its cap ends it sooner, 1.
 */
export function stallRisk(
  streamed: number,
  slow: number,
  capTokens: number,
  lengths: LengthCdf | undefined,
): number {
  const needed = gapsToSpare(slow) + 1;
  if (streamed >= needed) return 0;
  if (capTokens < needed || lengths === undefined) return 1;
  const seen = lengths.cdf(streamed - 1);
  const left = 1 - seen;
  if (left <= 1e-9) return 0.5;
  return Math.min(1, Math.max(0, (lengths.cdf(needed - 1) - seen) / left));
}
