/**
 * Decode tokens in runs, for a listener that takes them so (`EngineListener.onTokenRun`): the
 * simulator's, which keeps per-request gap statistics and nothing a token must be sent on.
 *
 * A sequence that decodes in consecutive steps gets each token at a step's end, so its gaps are
 * the intervals between this replica's step ends. Such a token is not reported one by one:
 * each step reports how many tokens continued a run (they share the step's interval), and each
 * sequence's run is reported once, when it ends — the sequence skips a step, finishes, pauses,
 * is preempted or cancelled — as the step numbers its tokens came at; the listener reads their
 * times here. A listener then touches a request's state once per run, not once per token.
 *
 * A sequence's run is `(runFrom, runTo]`: tokens at those steps not yet reported (the token at
 * `runFrom` was, or starts it). Step ends are kept in a ring, so a run is reported early when
 * it grows as long as the ring.
 */
import type { Ms } from '../core/request/units.ts';
import type { EngineListener, EngineRequest } from './engine-types.ts';
import type { Seq } from './sequence.ts';

/** Step ends kept: a run this long is reported and goes on. */
const RING = 1024;
const MASK = RING - 1;

/** `Seq.runFrom`/`runTo` of a sequence with no run open (its next token is reported alone). */
export const NO_RUN = -2;

/** The step at which `s`'s run, if it goes on, fills the ring and is reported. */
export function reportsAt(s: Seq<EngineRequest>): number {
  return s.runFrom + MASK;
}

/** The ends of a replica's recent steps, by step number. */
export interface StepEnds {
  endMs(step: number): Ms;
}

export class TokenRuns<R extends EngineRequest> implements StepEnds {
  private readonly ends = new Float64Array(RING);
  private readonly listener: EngineListener<R>;
  /** Number of the step ending now (the last one ended, between steps). */
  step = -1;

  constructor(listener: EngineListener<R>) {
    this.listener = listener;
  }

  endMs(step: number): Ms {
    return this.ends[step & MASK];
  }

  /** A step ends at `atMs`; returns its number. */
  stepEnded(atMs: Ms): number {
    const step = ++this.step;
    this.ends[step & MASK] = atMs;
    return step;
  }

  /** Whether `s`'s token now continues its run (its previous token came at the step before). */
  continues(s: Seq<R>): boolean {
    return s.runTo === this.step - 1;
  }

  /** `s`'s token at this step continues its run: held until the run ends (or fills the ring). */
  extend(s: Seq<R>): void {
    if (this.step - s.runFrom >= MASK) this.report(s);
    s.runTo = this.step;
  }

  /** `s`'s token at this step was reported alone: a run starts from it. */
  start(s: Seq<R>): void {
    s.runFrom = this.step;
    s.runTo = this.step;
  }

  /** Reports the tokens `s`'s run holds, and closes it: its next token is reported alone. */
  end(s: Seq<R>): void {
    if (s.runTo > s.runFrom) this.report(s);
    s.runFrom = NO_RUN;
    s.runTo = NO_RUN;
  }

  /** The tokens this step added to runs: `count`, each `atMs` minus the step before's end. */
  stepTokens(atMs: Ms, count: number): void {
    if (count > 0) this.listener.onStepTokens?.(atMs - this.endMs(this.step - 1), count);
  }

  private report(s: Seq<R>): void {
    this.listener.onTokenRun?.(s.req, this, s.runFrom, s.runTo);
    s.runFrom = s.runTo;
  }
}
