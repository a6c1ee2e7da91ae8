/**
 * What a simulated replica's events do to the request they belong to: its tracker records the
 * times (first token, each gap, or a run of gaps at once) and the pooled token gaps grow; the
 * control plane hears of its first token, of every token when it follows them, and of its end.
 * Unless the control plane follows every token, decode tokens come in runs (token-runs.ts): a
 * request's state is visited once per run, the pooled gaps once per step.
 */
import type { Ms } from '../core/request/units.ts';
import type { FinalState } from '../core/observe/request-outcome.ts';
import type { RunLengthSamples } from '../core/observe/run-length-samples.ts';
import type { Ticket } from '../core/queueing/ticket.ts';
import type { EngineListener, FailReason } from '../engine/engine-types.ts';
import type { StepEnds } from '../engine/token-runs.ts';
import type { RequestTracker } from './request-tracker.ts';

export interface TrackerHooks {
  /** Every token gap of the run, pooled. */
  readonly itl: RunLengthSamples;
  /** Whether the control plane follows every token (flow control's ledger does). */
  readonly followTokens: boolean;
  /** The control plane: a first token `ttftMs` after the ticket's offer, another token at `atMs`. */
  firstToken(ticket: Ticket<RequestTracker>, ttftMs: Ms): void;
  token(ticket: Ticket<RequestTracker>, atMs: Ms): void;
  /** The gap a client got: in the simulator, the engine's own. */
  gapDelivered(ticket: Ticket<RequestTracker>, gapMs: Ms, atMs: Ms): void;
  /** The attempt on its replica ended, completed or not. */
  endAttempt(t: RequestTracker, completed: boolean): void;
  /** The request ended, in `state`. */
  finish(t: RequestTracker, state: FinalState): void;
  /** A replica has room again: dispatch what waits. */
  pump(): void;
  sampleSpread(): void;
}

export function trackerListener(h: TrackerHooks): EngineListener<RequestTracker> {
  const { itl, followTokens } = h;
  return {
    onPrefillStart(t, atMs) {
      if (t.prefillStartMs === undefined) t.prefillStartMs = atMs;
    },
    onFirstToken(t, atMs, stepStartMs, cachedTokens) {
      if (t.resumedAfter > 0) {
        // A stream resumed on another replica: its next token, after the gap of the move.
        const gap = t.recordToken(atMs);
        if (gap >= 0) itl.add(gap);
        if (t.ticket !== null) h.firstToken(t.ticket, atMs - t.attemptOfferedMs);
        return;
      }
      t.firstTokenMs = atMs;
      t.firstStepStartMs = stepStartMs;
      t.lastTokenMs = atMs;
      t.cachedTokens += cachedTokens;
      t.streamed = 1;
      if (t.ticket !== null) h.firstToken(t.ticket, atMs - t.req.arrivalMs);
    },
    onToken(t, atMs) {
      const gap = t.recordToken(atMs);
      if (gap >= 0) itl.add(gap);
      if (followTokens && t.ticket !== null) {
        h.token(t.ticket, atMs);
        if (gap >= 0) h.gapDelivered(t.ticket, gap, atMs);
      }
    },
    ...(followTokens
      ? {}
      : {
          onTokenRun(t: RequestTracker, steps: StepEnds, from: number, to: number) {
            t.recordRun(steps, from, to);
          },
          onStepTokens(gapMs: Ms, count: number) {
            itl.add(gapMs, count);
          },
        }),
    onFinish(t) {
      h.endAttempt(t, true);
      h.finish(t, 'completed');
      h.pump();
      h.sampleSpread();
    },
    onPreempt(t) {
      t.preemptions++;
    },
    onPause(t) {
      t.paused();
    },
    onFail(t, _atMs, reason: FailReason) {
      h.endAttempt(t, false);
      t.failReason = reason;
      h.finish(t, 'failed');
      h.pump();
    },
  };
}
