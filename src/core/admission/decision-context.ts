/**
 * The admission context a pipeline hands its admission policy: the time, the fleet summary and
 * the demand estimator, read over the ready replicas of one decision. Its rule: one object
 * serves every decision (no allocation on the path every request takes), and the fleet summary
 * is computed on first use within a decision and never carried over to the next — `at` starts
 * a decision. The time is the pipeline's, read through its clock whenever asked.
 */
import type { AdmissionContext } from './admission.ts';
import type { ResolvedPolicy } from '../config/policy.ts';
import type { Clock } from '../ports/clock.ts';
import type { Demand } from '../request/demand.ts';
import type { LlmRequest } from '../request/request.ts';
import type { Ms, Tokens } from '../request/units.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';
import type { ReplicaSnapshot } from '../fleet/replica-snapshot.ts';
import type { QueueView } from '../queueing/queue-view.ts';
import { estimateDemand } from '../estimate/estimator.ts';
import type { FleetLoad } from '../estimate/fleet-load.ts';
import { summarizeFleet, type PlacementView } from '../estimate/fleet-summary.ts';
import type { Learned } from '../estimate/learned.ts';

/** What the context reads of the dispatcher: its queues, its placement, the cache hit it expects. */
export interface DecisionPlacement extends PlacementView {
  readonly waiting: QueueView;
  expectedHit(req: LlmRequest, replicas: readonly ReplicaSnapshot[]): Tokens;
}

export class DecisionContext implements AdmissionContext {
  private readonly policy: ResolvedPolicy;
  private readonly spec: FleetSpec;
  private readonly placement: DecisionPlacement;
  private readonly learned: Learned;
  private readonly clock: Clock;
  private replicas: readonly ReplicaSnapshot[] = [];
  private load: FleetLoad | undefined;
  private turnHolder = false;
  private readonly prefill = (tokens: Tokens, itlSloMs: Ms, stepMs: Ms, seqs: number) => {
    const { flow, ledger } = this.placement;
    return flow.servedPrefillMs(
      tokens,
      itlSloMs,
      stepMs,
      seqs,
      flow.stagesAnywhere(ledger.replicas),
    );
  };

  constructor(
    policy: ResolvedPolicy,
    spec: FleetSpec,
    placement: DecisionPlacement,
    learned: Learned,
    clock: Clock,
  ) {
    this.policy = policy;
    this.spec = spec;
    this.placement = placement;
    this.learned = learned;
    this.clock = clock;
  }

  /**
   * Starts a decision over `replicas`: what the last one summarised is dropped. `turnHolder`: it
   * is of a retry whose kept turn has come, which no turn is counted ahead of
   * (../queueing/kept-turns.ts).
   */
  at(replicas: readonly ReplicaSnapshot[], turnHolder = false): AdmissionContext {
    this.replicas = replicas;
    this.load = undefined;
    this.turnHolder = turnHolder;
    return this;
  }

  get nowMs() {
    return this.clock.now();
  }

  get fleet() {
    return this.summary();
  }

  readonly estimate = (req: LlmRequest): Demand =>
    estimateDemand(
      req,
      this.policy.classes[req.sloClass],
      this.summary(),
      this.learned.outputs,
      this.prefill,
      this.placement.expectedHit(req, this.replicas),
    );

  private summary(): FleetLoad {
    return (this.load ??= summarizeFleet(
      this.spec,
      this.placement.waiting,
      this.placement,
      this.replicas,
      this.clock.now(),
      this.turnHolder ? this.learned.forTurnHolder : this.learned.forSummary,
    ));
  }
}
