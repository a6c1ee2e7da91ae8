/**
 * What a simulated replica's events do to the request they belong to: its tracker records the
 * times (first token, each gap, or a run of gaps at once) and the pooled token gaps grow; the
 * control plane hears of its first token, of every token when it follows them, and of its end.
 * Unless the control plane follows every token, decode tokens come in runs (token-runs.ts): a
 * request's state is visited once per run, the pooled gaps once per step. Of a request for
 * several choices, each choice's events are its stream's; the request ends with the last.
 */
import type { Ms } from '../core/request/units.ts';
import type { FinalState } from '../core/observe/request-outcome.ts';
import type { RunLengthSamples } from '../core/observe/run-length-samples.ts';
import type { Ticket } from '../core/queueing/ticket.ts';
import type { EngineListener, FailReason } from '../engine/engine-types.ts';
import type { StepEnds } from '../engine/token-runs.ts';
import type { RequestTracker } from './request-tracker.ts';
import type { SimSequence } from './choice-stream.ts';

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

export function trackerListener(h: TrackerHooks): EngineListener<SimSequence> {
  const { itl, followTokens } = h;
  /** One of its streams ended; the request, once all have (a request of one has one). */
  const ended = (t: RequestTracker) => --t.streamsLeft === 0;
  return {
    onPrefillStart(s, atMs) {
      const t = s.request;
      if (t.prefillStartMs === undefined) t.prefillStartMs = atMs;
    },
    onFirstToken(s, atMs, stepStartMs, cachedTokens) {
      const t = s.request;
      if (t.resumedAfter > 0) {
        // A stream resumed on another replica: its next token, after the gap of the move.
        const gap = t.recordToken(atMs);
        if (gap >= 0) itl.add(gap);
        if (t.ticket !== null) h.firstToken(t.ticket, atMs - t.attemptOfferedMs);
        return;
      }
      s.started(atMs);
      t.cachedTokens += cachedTokens;
      if (t.firstTokenMs === undefined) {
        // The request's first token, of whichever choice: its client's TTFT.
        t.firstTokenMs = atMs;
        t.firstStepStartMs = stepStartMs;
        if (t.ticket !== null) h.firstToken(t.ticket, atMs - t.req.arrivalMs);
      } else if (followTokens && s === t && t.ticket !== null) h.token(t.ticket, atMs);
    },
    onToken(s, atMs) {
      const gap = s.recordToken(atMs);
      if (gap >= 0) itl.add(gap);
      const t = s.request;
      if (followTokens && t.ticket !== null) {
        // The engine's pace is read from the first choice's tokens, as the gateway reads it.
        if (s === t) h.token(t.ticket, atMs);
        if (gap >= 0) h.gapDelivered(t.ticket, gap, atMs);
      }
    },
    ...(followTokens
      ? {}
      : {
          onTokenRun(s: SimSequence, steps: StepEnds, from: number, to: number) {
            s.recordRun(steps, from, to);
          },
          onStepTokens(gapMs: Ms, count: number) {
            itl.add(gapMs, count);
          },
        }),
    onFinish(s) {
      const t = s.request;
      if (!ended(t)) return;
      h.endAttempt(t, true);
      h.finish(t, 'completed');
      h.pump();
      h.sampleSpread();
    },
    onPreempt(s) {
      s.request.preemptions++;
    },
    onPause(s) {
      s.paused();
    },
    onFail(s, _atMs, reason: FailReason) {
      // Refused as it was queued: its choices already queued are dropped with it.
      const t = s.request;
      t.streamsLeft = 0;
      h.endAttempt(t, false);
      t.failReason = reason;
      h.finish(t, 'failed');
      h.pump();
    },
  };
}
