/**
 * Feeds the gateway's finished requests to the SLO tracker (core/slo) and counts what each adds:
 * `ended` is called once per request, wherever it ends — refused at the door or by admission,
 * expired or stopped in the queue, or at the end of its stream — with what the stream measured.
 * A request's model is the LoRA adapter it named, else the served model. Requests that never
 * become one the policy looks at (unreadable, unauthenticated, gone during their upload) and
 * those a backend refused as malformed (its 4xx) are no SLO's: they have no class, or are the
 * client's fault outright.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { LlmRequest } from '../core/request/request.ts';
import type { Ms } from '../core/request/units.ts';
import type { RejectReason } from '../core/request/decision.ts';
import { GapTally } from '../core/slo/gap-tally.ts';
import type { FinishedRequest } from '../core/slo/slo-events.ts';
import { SloTracker } from '../core/slo/slo-tracker.ts';
import type { SloDefinition, Who } from '../core/slo/slo.ts';
import type { SloMetrics } from './slo-metrics.ts';
import type { StopCause } from './stop.ts';
import type { StreamMeter } from './stream-meter.ts';

/** How a request ended, as the gateway knows it where it ends. */
export type Ending = Pick<FinishedRequest, 'finish' | 'reason' | 'dispatched'>;

/** What a stream measured: its first and last token from arrival, its gaps. */
export interface Measured {
  readonly ttftMs?: Ms;
  readonly e2eMs?: Ms;
  readonly gaps?: GapTally;
}

/** The ending of a request the gateway stopped (stop.ts). */
export function stopped(why: StopCause, dispatched: boolean): Ending {
  switch (why) {
    case 'client_closed':
      return { finish: 'client_closed', dispatched };
    case 'deadline_exceeded':
      return { finish: 'expired', reason: 'deadline_exceeded', dispatched };
    case 'shutting_down':
    case 'handed_over':
      return { finish: 'failed', reason: why, dispatched };
  }
}

/** The ending of a request admission refused: a retry after its backend failed, a failure. */
export function refused(reason: RejectReason, retry: boolean): Ending {
  if (retry) return { finish: 'failed', dispatched: true };
  return { finish: 'refused', reason, dispatched: false };
}

export class SloExport {
  readonly tracker: SloTracker;
  private readonly metrics: SloMetrics;
  private readonly model: string;

  constructor(slos: readonly SloDefinition[], clock: Clock, metrics: SloMetrics, model: string) {
    this.tracker = new SloTracker(slos, clock);
    this.metrics = metrics;
    this.model = model;
    metrics.declare(slos, () => this.tracker.status());
  }

  /** A stream's gap tally, against the thresholds of the SLOs that cover its request. */
  gaps(req: LlmRequest): GapTally {
    return new GapTally(this.tracker.gapThresholds(this.who(req)));
  }

  ended(req: LlmRequest, ending: Ending, measured: Measured = {}): void {
    const r = this.tracker.record({ ...this.who(req), ...ending, ...measured });
    const m = this.metrics;
    for (const e of r.events) {
      const labels = { slo: e.slo, objective: e.objective, kind: e.kind };
      if (e.good > 0) m.events.inc({ ...labels, outcome: 'good' }, e.good);
      if (e.bad > 0) m.events.inc({ ...labels, outcome: 'bad' }, e.bad);
    }
    for (const x of r.excluded) m.excluded.inc({ slo: x.slo, exclusion: x.exclusion });
  }

  /** A stream's end, with what its meter measured: its TTFT, and its E2E when it completed. */
  streamed(req: LlmRequest, ending: Ending, meter: StreamMeter, gaps: GapTally): void {
    const { arrivalMs, firstTokenMs, lastTokenMs } = meter;
    const completed = ending.finish === 'completed';
    this.ended(req, ending, {
      ttftMs: firstTokenMs === undefined ? undefined : firstTokenMs - arrivalMs,
      e2eMs: completed && lastTokenMs !== undefined ? lastTokenMs - arrivalMs : undefined,
      gaps,
    });
  }

  private who(req: LlmRequest): Who {
    return {
      sloClass: req.sloClass,
      tenant: req.tenant,
      model: req.adapter ?? req.model ?? this.model,
    };
  }
}
