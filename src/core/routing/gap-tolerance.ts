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

/** The most slow gaps a stream is weighed for: past them, none is spared. */
export const MAX_SPARED_STALLS = 32;
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
    for (let n = 2; need <= MAX_SPARED_STALLS; n++) {
      const spared = n - 2 - Math.floor(0.99 * (n - 1));
      while (need <= MAX_SPARED_STALLS && need <= spared) SPARE_TABLE[need++] = n;
    }
  }
  return slow <= MAX_SPARED_STALLS ? SPARE_TABLE[slow] : Infinity;
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

/** A stream as the stall it may face is weighed (a ledger entry has these). */
export interface StreamAtRisk {
  readonly streamed: number;
  readonly slowGaps: number;
  readonly capTokens: number;
  readonly lengths: LengthCdf | undefined;
  /** Its choices: each a stream the stall reaches. */
  readonly seqs: number;
  readonly itlSloMs: Ms;
}

/**
 * How many more decode steps until `streams` could take `slow` more slow steps with at most
 * `limit` of them expected past their p99 — nothing new joining them. Each runs on, and is
 * weighed as `stallRisk` weighs it, times the chance it is still running: P(s + k ≤ length <
 * needed | length ≥ s). A stream whose class's lengths are unknown counts 1 until it has the
 * gaps or reaches its cap. The sum only falls with k, so the steps are searched — over the
 * streams still short of their gaps alone, which under load are few of a replica's.
 */
export function stepsUntilSpare(
  streams: readonly StreamAtRisk[],
  slow: number,
  limit: number,
): number {
  const young: YoungStream[] = [];
  let hi = 0;
  for (const e of streams) {
    if (e.itlSloMs === Infinity) continue;
    const needed = gapsToSpare(e.slowGaps + slow) + 1;
    const until = Math.min(needed, e.capTokens);
    if (e.streamed >= until) continue;
    hi = Math.max(hi, until - e.streamed);
    const lengths = e.lengths;
    const left = lengths === undefined ? 1 : 1 - lengths.cdf(e.streamed - 1);
    young.push({
      from: e.streamed,
      until,
      lengths: left <= 1e-9 ? undefined : lengths,
      // Longer than every length seen: unknown, as stallRisk says — half.
      weight: left <= 1e-9 ? 0.5 * e.seqs : lengths === undefined ? e.seqs : e.seqs / left,
      // Ending at its cap before it has the gaps is a miss too, however long it would run.
      upTo: lengths === undefined || e.capTokens < needed ? 1 : lengths.cdf(needed - 1),
    });
  }
  if (!tooRiskyAfter(young, 0, limit)) return 0;
  // A stream with neither a cap nor the gaps in reach: never (no search can bound it).
  if (!Number.isFinite(hi)) return Infinity;
  let lo = 0; // risky at lo; at hi every young stream has its gaps or has ended
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (tooRiskyAfter(young, mid, limit)) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** A stream short of its gaps, as `stepsUntilSpare` weighs it `k` tokens on. */
interface YoungStream {
  readonly from: number;
  readonly until: number;
  readonly lengths: LengthCdf | undefined;
  readonly weight: number;
  readonly upTo: number;
}

/** Whether, `k` tokens on, the young streams still running and short of the gaps exceed `limit`. */
function tooRiskyAfter(young: readonly YoungStream[], k: number, limit: number): boolean {
  let risk = 0;
  for (const y of young) {
    const at = y.from + k;
    if (at >= y.until) continue;
    risk +=
      y.lengths === undefined ? y.weight : y.weight * Math.max(0, y.upTo - y.lengths.cdf(at - 1));
    if (risk > limit) return true;
  }
  return false;
}
