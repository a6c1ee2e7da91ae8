/**
 * A replica's pace against its profile. Flow control plans every step with the GPU's timing
 * profile (`../ports/step-time.ts`), but a replica may run slower than that: another clock, a
 * host CPU busy with other work, an engine build the profile was not fitted to. Trusting the
 * profile, flow control would pack more streams there than keep their gap objective, and every
 * one of them would miss it.
 *
 * So each stream's tokens are timed in spans of at least `spanTokens`, and a span adds up what
 * the profile says the steps it covered take; its elapsed time over that sum is one sample.
 * A replica's steps show as the instants its tokens come at (tokens within `SAME_STEP_MS` are
 * one instant): a step ends there and the next begins with the batch as the ledger stands at
 * the end of that instant. What is placed while a step runs waits for the one after, so a step's
 * profile is taken when its batch first changes after it began, or when it ends if nothing did.
 * Spans, because a relay's tokens come in bunches and single gaps mean nothing; each step's own
 * profile, because a batch that prefilled for part of a span must not read as a change of pace.
 *
 * A replica's pace is the median of its last `window` samples once it has `minSamples`, where
 * that median is beyond `1 + tolerance` (what the ledger cannot see of a batch, which the ITL
 * margin covers); otherwise 1. Never below 1: a replica faster than its profile keeps the
 * profile's margin. Flow control multiplies every step it predicts there by it
 * (`flow-control.ts`), routing every time it prices there (`scorers.ts`), and the autoscaler a
 * group's capacity (`../autoscale/scale-window.ts`). The profile is evaluated at most once per
 * step and once per change of the batch, not per token; a replica gives at most one sample
 * every `everyMs`.
 */
import type { Ms } from '../request/units.ts';
import type { LedgerEntry, ReplicaAccount } from '../fleet/replica-ledger.ts';
import { SortedWindow } from '../stats/sorted-window.ts';
import type { FlowControl } from './flow-control.ts';

export interface StepPaceParams {
  /** A pace within 1 + tolerance of the profile counts as the profile's own. */
  readonly tolerance: number;
  /** Recent samples kept per replica. */
  readonly window: number;
  /** Samples a replica needs before its pace may move from 1. */
  readonly minSamples: number;
  /** Tokens a stream's span covers at least before it is a sample. */
  readonly spanTokens: number;
  /** The shortest time between two samples of one replica. */
  readonly everyMs: Ms;
}

export const DEFAULT_STEP_PACE: StepPaceParams = {
  tolerance: 0.15,
  window: 32,
  minSamples: 8,
  spanTokens: 16,
  everyMs: 50,
};

/** A sample beyond this is a stream stuck for reasons a step cannot explain. */
const MAX_SAMPLE = 20;
/**
 * Tokens this close together came out of one step: a relay reads a step's tokens off its
 * streams' connections within a loop turn or so, never a step apart.
 */
const SAME_STEP_MS = 1;

export class StepPace {
  readonly params: StepPaceParams;
  private readonly flow: FlowControl;

  constructor(flow: FlowControl, params: StepPaceParams = DEFAULT_STEP_PACE) {
    this.flow = flow;
    this.params = params;
  }

  /** Its batch is about to change at `nowMs` (a request placed or ended there). */
  changing(a: ReplicaAccount, nowMs: Ms): void {
    const t = a.paceTrack;
    // Within a step, the step that is running keeps the batch it began with. Only a change at
    // the very instant its tokens came joins the next step (the engine schedules it as it
    // starts that step); any later one is within it.
    if (nowMs !== t.boundaryMs && t.runningStepMs !== t.runningStepMs) {
      t.runningStepMs = this.batchStepMs(a);
    }
  }

  /**
   * A stream's first token came at `nowMs`, before the ledger counts it: a step ended there
   * (the stream's span starts at it: `ReplicaLedger.firstToken`).
   */
  started(a: ReplicaAccount, nowMs: Ms): void {
    this.boundary(a, nowMs);
  }

  /**
   * `e` streamed a token at `nowMs` (the ledger has counted it): the step it ends joins its
   * span, and the span is a sample of its replica's pace when long enough and the replica is
   * due one.
   */
  streamed(a: ReplicaAccount, e: LedgerEntry, nowMs: Ms): void {
    const t = a.paceTrack;
    if (nowMs - t.boundaryMs >= SAME_STEP_MS) this.boundary(a, nowMs);
    e.spanProfileMs += t.endedStepMs;
    if (e.streamed - e.spanFromToken < this.params.spanTokens) return;
    if (nowMs - t.sampledMs < this.params.everyMs) return;
    const sample = (nowMs - e.spanFromMs) / e.spanProfileMs;
    e.spanFromMs = nowMs;
    e.spanFromToken = e.streamed;
    e.spanProfileMs = 0;
    if (!(sample >= 0) || sample === Infinity) return;
    t.sampledMs = nowMs;
    const w = (t.samples ??= new SortedWindow(this.params.window));
    w.add(Math.min(MAX_SAMPLE, sample));
    const median = w.quantile(50);
    t.measured = w.size >= this.params.minSamples;
    a.pace = t.measured && median > 1 + this.params.tolerance ? median : 1;
  }

  /** Tokens came at `nowMs`: a step ended there, and the next began. */
  private boundary(a: ReplicaAccount, nowMs: Ms): void {
    const t = a.paceTrack;
    if (nowMs - t.boundaryMs < SAME_STEP_MS) return;
    const kept = t.runningStepMs;
    t.endedStepMs = kept === kept ? kept : this.batchStepMs(a);
    t.runningStepMs = NaN;
    t.boundaryMs = nowMs;
  }

  /** The profile's step for the replica's batch now: evaluated once per change of the batch. */
  private batchStepMs(a: ReplicaAccount): Ms {
    const t = a.paceTrack;
    const known = t.batchStepMs;
    return known === known ? known : (t.batchStepMs = this.flow.profileStepMs(a));
  }

  /** The replica was removed: whatever takes its index starts from the profile. */
  static forget(a: ReplicaAccount): void {
    a.pace = 1;
    const t = a.paceTrack;
    t.samples = null;
    t.measured = false;
    t.sampledMs = -Infinity;
    t.boundaryMs = -Infinity;
    t.endedStepMs = 0;
    t.runningStepMs = NaN;
    t.batchStepMs = NaN;
  }
}
