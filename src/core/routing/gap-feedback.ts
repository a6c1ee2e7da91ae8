/**
 * Flow control's step budget, corrected by the gaps clients actually got. Flow control plans
 * every step within a share of the tightest gap objective (`flow-control.ts`: 1 − the step's
 * variance margin − the relay's share), and trusts the host to deliver a step's tokens within
 * the rest. A host that runs late — a gateway whose cores are shared with a noisy neighbour, an
 * engine host whose timers slip — eats that rest, and streams planned exactly to their budget
 * miss their objective by a few milliseconds. Step pace (`step-pace.ts`) cannot see this: it
 * follows the median step, and the lateness is in the tail.
 *
 * So every gap a stream's client received (in the gateway, timed at the write; in the simulator,
 * the engine's own gap) is checked against its objective. A gap past `lateRatio` of it that flow
 * control did not plan (a stream's late gaps beyond the prefill stalls charged to it) is late.
 * On a late gap the share a step may take is cut by `backoff` — at most once per `holdMs`, since
 * one late turn of the host makes many streams late at once — down to `floorRatio` of the
 * configured share, and it grows back by `recoverPerS` each second, to the configured share.
 * A multiplicative cut and a linear return (TCP's congestion window): the budget settles just
 * below where the host starts to run late, and a host that keeps its time is never cut.
 */
import type { Ms } from '../request/units.ts';

export interface GapFeedbackParams {
  /** A gap past this share of its stream's objective is late. */
  readonly lateRatio: number;
  /** The step share's cut on a late gap (multiplied). */
  readonly backoff: number;
  /** The lowest share, as a ratio of the configured one. */
  readonly floorRatio: number;
  /** The share regained each second without a late gap. */
  readonly recoverPerS: number;
  /** The shortest time between two cuts. */
  readonly holdMs: Ms;
}

export const DEFAULT_GAP_FEEDBACK: GapFeedbackParams = {
  lateRatio: 0.8,
  backoff: 0.9,
  floorRatio: 0.5,
  recoverPerS: 0.01,
  holdMs: 1_000,
};

export class GapFeedback {
  private readonly params: GapFeedbackParams;
  /** The share flow control is configured with: the ceiling. */
  private readonly configured: number;
  /** The share at the last cut, and when it was made (-Infinity: never). */
  private cutShare: number;
  private cutMs: Ms = -Infinity;
  /** Late gaps seen (the host's metrics), and cuts made. */
  lateGaps = 0;
  cuts = 0;

  constructor(configuredShare: number, params: GapFeedbackParams) {
    this.configured = configuredShare;
    this.cutShare = configuredShare;
    this.params = params;
  }

  /** Whether a gap of `gapMs` on a stream with objective `itlSloMs` is late. */
  isLate(gapMs: Ms, itlSloMs: Ms): boolean {
    return gapMs > this.params.lateRatio * itlSloMs;
  }

  /** An unplanned late gap was delivered at `nowMs`. */
  late(nowMs: Ms): void {
    this.lateGaps++;
    if (nowMs - this.cutMs < this.params.holdMs) return;
    const floor = this.configured * this.params.floorRatio;
    this.cutShare = Math.max(floor, this.share(nowMs) * this.params.backoff);
    this.cutMs = nowMs;
    this.cuts++;
  }

  /** The share of a gap objective a step may take at `nowMs`. */
  share(nowMs: Ms): number {
    if (this.cutMs === -Infinity) return this.configured;
    const regained = (this.params.recoverPerS * Math.max(0, nowMs - this.cutMs)) / 1000;
    return Math.min(this.configured, this.cutShare + regained);
  }
}
