/**
 * What the control plane learns from what happens to the requests it admitted, and where each
 * lesson comes from: output lengths (natural ends), how good the door's predictions were, each
 * class's queue budget (first tokens after dispatch), the wait calibration (tickets leaving the
 * queue), the queue-delay control (refusals for a wait) and the turns refused requests keep
 * (how many of their clients come back). The pipeline reports the events;
 * the fleet summary reads the models. One per pipeline, configured by its policy.
 */
import type { ResolvedPolicy } from '../config/policy.ts';
import type { Ticket } from '../queueing/ticket.ts';
import { QueueDelayControl } from '../queueing/queue-delay.ts';
import type { SloClassName } from '../request/slo-classes.ts';
import type { Ms, Tokens } from '../request/units.ts';
import type { SummaryLearners } from './fleet-summary.ts';
import type { RestoredSummary } from './learned-state.ts';
import { OutputLengthModel } from './output-length-model.ts';
import { PredictionErrors } from './prediction-errors.ts';
import { QueueBudgets } from './queue-budget.ts';
import { DEFAULT_WAIT_CALIBRATION, WaitCalibration } from './wait-calibration.ts';
import { choicesOf } from '../request/demand.ts';
import { KeptTurns } from '../queueing/kept-turns.ts';

export class Learned {
  readonly outputs: OutputLengthModel;
  readonly errors = new PredictionErrors();
  readonly queueBudgets: QueueBudgets;
  readonly waitCalibration: WaitCalibration;
  readonly queueDelay: QueueDelayControl | undefined;
  /** The turns requests refused for their wait keep (`retry_after.keep_turns`). */
  readonly turns: KeptTurns | undefined;
  /** What the fleet summary reads of them (fixed for the pipeline's life). */
  readonly forSummary: SummaryLearners;
  /** The same, for a retry whose turn has come: no turn is counted ahead of it. */
  readonly forTurnHolder: SummaryLearners;
  /** The saved state these were restored from (learned-state.ts); undefined: a cold start. */
  restored: RestoredSummary | undefined = undefined;

  constructor(policy: ResolvedPolicy) {
    const a = policy.admission;
    this.outputs = new OutputLengthModel({
      window: policy.estimate.outputWindow,
      minSamples: policy.estimate.minSamples,
      prior: policy.estimate.priorOutput,
      reserve: policy.estimate.priorOutputReserve,
      byClass: policy.estimate.classPriors,
    });
    this.queueBudgets = new QueueBudgets(policy.classes, a.type === 'goodput' ? a.marginMs : 0);
    this.waitCalibration = new WaitCalibration({
      ...DEFAULT_WAIT_CALIBRATION,
      sureQuantile: a.type === 'goodput' ? a.sureWaitQuantile : 50,
    });
    this.queueDelay =
      a.type === 'goodput'
        ? new QueueDelayControl({ targetRatio: a.queueTargetRatio, intervalMs: a.queueIntervalMs })
        : undefined;
    this.turns = a.type === 'goodput' && a.keepTurns ? new KeptTurns(a.retryAfterMaxMs) : undefined;
    const models = {
      classes: policy.classes,
      budgets: this.queueBudgets,
      calibration: this.waitCalibration,
      queueDelay: this.queueDelay,
      outputs: this.outputs,
    };
    this.forSummary = { ...models, turns: this.turns };
    this.forTurnHolder = models;
  }

  /**
   * A ticket left the queue at `leftMs` (dispatched, or expired with the wait it had reached):
   * its wait against what the queue model predicted at the door calibrates the next
   * predictions. Deferred work waits by design and says nothing of the model.
   */
  leftQueue<H>(t: Ticket<H>, leftMs: Ms): void {
    const a = t.decision.assessment;
    if (a === undefined || t.wasDeferred) return;
    this.waitCalibration.observe(
      t.cls.name,
      t.req.inputTokens,
      a.modelledWaitMs,
      leftMs - t.offeredMs,
    );
  }

  /** A ticket was dispatched: its output lengths (each choice's) will be learned when it ends. */
  dispatched<H>(t: Ticket<H>): void {
    this.outputs.started(t.cls.name, t.req.tenant, choicesOf(t.req), t.req.reasoningEffort);
  }

  /** A request of `cls` was refused at the door because its wait would not fit. */
  refusedForWait(cls: SloClassName, nowMs: Ms): void {
    this.queueDelay?.refused(cls, nowMs);
  }

  firstToken<H>(t: Ticket<H>, ttftMs: Ms): void {
    if (t.dispatchedMs >= 0) {
      this.queueBudgets.observe(t.cls.name, t.asked.arrivalMs + ttftMs - t.dispatchedMs);
    }
    // Deferred work waits by design; its TTFT says nothing of the prediction at the door.
    const predicted = t.decision.assessment?.predictedTtftMs;
    if (predicted !== undefined && !t.wasDeferred && t.cls.objectives.ttftMs !== undefined) {
      this.errors.recordTtft(predicted, ttftMs);
    }
  }

  /**
   * A dispatched ticket ended with `outputs`, each choice's tokens (one for most requests);
   * `completed` when it ran to its natural end (EOS or max tokens).
   */
  ended<H>(t: Ticket<H>, outputs: readonly Tokens[], completed: boolean): void {
    if (!completed) {
      this.outputs.abandoned(t.cls.name, t.req.tenant, choicesOf(t.req), t.req.reasoningEffort);
      return;
    }
    for (const outputTokens of outputs) {
      // An output cut at its cap is a lower bound of the true length: the length model keeps it
      // as one, and the prediction error, which needs the true length, leaves it out.
      const capped = t.req.maxTokens !== undefined && outputTokens >= t.req.maxTokens;
      this.outputs.observe(t.cls.name, t.req.tenant, outputTokens, capped, t.req.reasoningEffort);
      if (!capped) this.errors.recordOutput(t.demand.output.p90, outputTokens);
    }
  }
}
