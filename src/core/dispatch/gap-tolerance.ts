/**
 * How many slow token gaps a streaming request can absorb and still meet its p99 gap objective.
 * A request's p99 is taken over its own n gaps with numpy's linear interpolation, so the top
 * ~1% of gaps are (almost) free: a 300-token answer shrugs off two slow steps, a 50-token one
 * only a mild one. The dispatcher uses this to decide whether a long prompt may run its prefill
 * next to a replica's active decodes.
 */
import type { Ms } from '../request/units.ts';

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
