/**
 * A dispatched stream's tokens counted on their way to the client. The first one's time is the
 * TTFT the pipeline's estimators, the request's trace and the TTFT histograms learn from; each
 * later one's arrival is the engine's pace (for a policy that follows tokens), and its gap, taken
 * once it was written (`stream-meter.ts`), goes to the ITL histogram, the class's SLO tally and
 * flow control, which cuts its step budget while clients get gaps late.
 * Series and cells are resolved once per request: the per-token path does no label hashing.
 * At its end, what it measured becomes its outcome record, beside what admission predicted.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { Pipeline } from '../core/pipeline.ts';
import { followsTokens } from '../core/pipeline-host.ts';
import type { Ticket } from '../core/queueing/ticket.ts';
import type { Ms } from '../core/request/units.ts';
import type { GapTally } from '../core/slo/gap-tally.ts';
import type { StreamEnd, TokenSink } from './backend.ts';
import type { RequestCounts, RequestLabels } from './request-counts.ts';
import type { Ending, SloExport } from './slo-export.ts';
import type { FinalState, RequestOutcome } from '../core/observe/request-outcome.ts';
import { outcomeRecord, type OutcomeRecord } from '../core/observe/outcome-record.ts';
import { StreamMeter } from './stream-meter.ts';
import { choicesOf } from '../core/request/demand.ts';
import type { AttemptTrace } from './tracing/request-trace.ts';
import type { Waiter } from './waiter.ts';

export interface MeteredStream {
  readonly meter: StreamMeter;
  readonly labels: RequestLabels;
  /** The class's gap tally, for the SLOs' account of the stream's end. */
  readonly gaps: GapTally;
  /** Hands each token on to the client's answer once it is counted. */
  readonly sink: TokenSink;
  /** The stream ended: tokens of its last turn not yet written go out with its end, now. */
  readonly ended: () => void;
  /**
   * The request ended so, with `outputTokens` and at `atMs`: what it measured, and its outcome
   * record, judged against its class beside what admission predicted.
   */
  /**
   * `triedAgain`: the attempt failed and the request is tried again (its record says so);
   * `end`: the stream's end, when it ran to one (its prefix-cache hits, as the backend said).
   */
  readonly outcomeOf: (
    ending: Ending,
    outputTokens: number,
    atMs: Ms,
    triedAgain: boolean,
    end: Pick<StreamEnd, 'cachedTokens'> | undefined,
  ) => { readonly outcome: RequestOutcome; readonly record: OutcomeRecord };
}

/** A stream's end as its outcome record states it. */
const FINAL_STATE: Readonly<Record<Ending['finish'], FinalState>> = {
  completed: 'completed',
  client_closed: 'cancelled',
  expired: 'failed',
  failed: 'failed',
  refused: 'rejected',
};

export function meteredStream(
  parts: {
    readonly clock: Clock;
    readonly pipeline: Pipeline<Waiter>;
    readonly counts: RequestCounts;
    readonly slos: SloExport;
  },
  ticket: Ticket<Waiter>,
  attempt: AttemptTrace,
  onToken: TokenSink,
): MeteredStream {
  const { clock, pipeline, counts } = parts;
  const choices = choicesOf(ticket.req);
  const meter = new StreamMeter(clock, ticket.asked.arrivalMs, ticket.capTokens);
  const follow = followsTokens(pipeline.policy);
  const gaps = parts.slos.gaps(ticket.asked);
  const labels = counts.labels(ticket.asked);
  const itl = counts.gaps(labels);
  const gapSent = (gap: Ms) => {
    itl.observe(gap / 1000);
    gaps.add(gap);
  };
  // Each choice's tokens are timed as their own stream (`sent[c]`).
  const sent = Array.from({ length: choices }, (_, c) => (atMs: Ms) => {
    const gap = meter.sent(atMs, gapSent, c);
    if (follow && gap !== undefined) pipeline.gapDelivered(ticket, gap, atMs);
  });
  const sink: TokenSink = (token) => {
    // A choice's end (of several) carries no token: it goes on to the client as it is.
    if (token.finish !== undefined) return onToken(token);
    const c = token.choice ?? 0;
    const othersUnsent = meter.unsent(c);
    if (meter.arrived(c)) {
      const ttft = (meter.firstTokenMs ?? 0) - meter.arrivalMs;
      attempt.firstToken(meter.firstTokenMs ?? clock.now());
      pipeline.firstToken(ticket, ttft);
      counts.firstToken(labels, ttft, ticket.dispatchedMs - meter.arrivalMs);
      onToken(token);
      return;
    }
    // The engine's pace is read where its tokens arrive (a step's, from its first choice); the
    // gap, where the first of the choice's tokens not yet sent is written (the others go with it).
    if (follow && c === 0) pipeline.token(ticket, clock.now());
    onToken(token, othersUnsent ? undefined : sent[c]);
  };
  const outcomeOf = (
    ending: Ending,
    outputTokens: number,
    atMs: Ms,
    triedAgain: boolean,
    end: Pick<StreamEnd, 'cachedTokens'> | undefined,
  ) => {
    const state = FINAL_STATE[ending.finish];
    const outcome = meter.outcome(ticket.asked, state, outputTokens, end?.cachedTokens);
    const predicted = ticket.decision.assessment?.predictedTtftMs;
    return { outcome, record: outcomeRecord(outcome, ticket.cls, atMs, predicted, triedAgain) };
  };
  const ended = () => {
    for (const s of sent) s(clock.now());
  };
  return { meter, labels, gaps, sink, ended, outcomeOf };
}
