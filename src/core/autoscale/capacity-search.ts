/**
 * The capacity envelope's search, as DistServe defines per-GPU goodput: the highest request rate
 * per replica group at which SLO attainment stays at or above the target. Probes are runs at a
 * rate (simulated or live) that say whether attainment held; the search doubles from a first
 * rate until a probe fails (or halves until one passes), then bisects geometrically until the
 * bracket is within `precision`. It assumes attainment falls as the rate rises; a run where it
 * does not is visible in the probes it returns, each with its numbers.
 */
export interface CapacityProbe {
  /** Requests per second per replica group. */
  readonly ratePerGroup: number;
  /** Good requests over offered. */
  readonly attainment: number;
  readonly pass: boolean;
  /** What else the probe measured, for the table (goodput, p99s…). */
  readonly detail: Readonly<Record<string, number | null>>;
}

export interface CapacitySearch {
  /** The highest rate per group that passed; 0 when none did. */
  readonly ratePerGroup: number;
  /** The lowest rate that failed, when one did. */
  readonly failedAt: number | null;
  /** In the order they ran. */
  readonly probes: readonly CapacityProbe[];
}

export interface SearchOptions {
  readonly target: number;
  readonly firstRate: number;
  /** Stop when failedAt / ratePerGroup ≤ 1 + precision. */
  readonly precision: number;
  readonly maxProbes: number;
  /** Below this rate a failure is reported as no capacity at all. */
  readonly minRate: number;
}

export async function searchCapacity(
  run: (ratePerGroup: number) => Promise<Omit<CapacityProbe, 'pass'>>,
  opts: SearchOptions,
): Promise<CapacitySearch> {
  const probes: CapacityProbe[] = [];
  const probe = async (rate: number) => {
    const p = await run(rate);
    const done = { ...p, pass: p.attainment >= opts.target };
    probes.push(done);
    return done.pass;
  };
  let lo = 0;
  let hi: number | null = null;
  let rate = opts.firstRate;
  // Bracket: double up from a pass, or halve down from a failure.
  if (await probe(rate)) {
    lo = rate;
    while (probes.length < opts.maxProbes) {
      rate *= 2;
      if (!(await probe(rate))) {
        hi = rate;
        break;
      }
      lo = rate;
    }
  } else {
    hi = rate;
    while (probes.length < opts.maxProbes && rate / 2 >= opts.minRate) {
      rate /= 2;
      if (await probe(rate)) {
        lo = rate;
        break;
      }
      hi = rate;
    }
  }
  // Bisect the bracket on a log scale.
  while (hi !== null && lo > 0 && hi / lo > 1 + opts.precision && probes.length < opts.maxProbes) {
    const mid = Math.sqrt(lo * hi);
    if (await probe(mid)) lo = mid;
    else hi = mid;
  }
  return { ratePerGroup: lo, failedAt: hi, probes };
}
