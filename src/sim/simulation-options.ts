/** What one simulated run is given (`simulation.ts`): its workload, policy, fleet and hooks. */
import type { LlmRequest } from '../core/request/request.ts';
import type { Ms } from '../core/request/units.ts';
import type { Rng } from '../core/ports/rng.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { ResolvedPolicy } from '../core/config/policy.ts';
import type { RequestOutcome } from '../core/observe/request-outcome.ts';
import type { Learned } from '../core/estimate/learned.ts';
import type { DecisionRecord } from '../core/observe/decision-record.ts';
import type { OutcomeRecord } from '../core/observe/outcome-record.ts';
import type { EngineConfig } from '../engine/engine-types.ts';
import type { TimingProfile } from '../engine/timing/profile.ts';
import type { PrefillSpec } from './fleet.ts';
import type { CapacityEventOptions } from './capacity-events.ts';
import type { AutoscaleOptions } from './autoscaling.ts';
import type { ClientBehaviour } from './client-behaviour.ts';

export interface SimulationOptions extends CapacityEventOptions {
  readonly seed: number;
  readonly rng: Rng;
  readonly policy: ResolvedPolicy;
  readonly requests: Iterable<LlmRequest>;
  readonly replicas: number;
  readonly engine: EngineConfig;
  readonly profile: TimingProfile;
  /** The step time the control plane plans with, where the replicas run slower than it knows. */
  readonly plannedProfile?: TimingProfile;
  readonly client: ClientBehaviour;
  readonly scenario: Record<string, unknown>;
  /** Wall clock for the report's `sim` block only; never used by the model. */
  readonly wallClock: Clock;
  /** Called every few thousand events with simulated time and requests finished. */
  readonly onProgress?: (simMs: Ms, finished: number) => void;
  /** Receives every decision record (admission and route of each attempt). */
  readonly onDecision?: (record: DecisionRecord) => void;
  /** Receives every request's outcome when it ends, with the time and whether it was good. */
  readonly onOutcome?: (outcome: RequestOutcome, atMs: Ms, good: boolean) => void;
  /** How each request dispatched on its last attempt ended, against its prediction. */
  readonly onOutcomeRecord?: (record: OutcomeRecord) => void;
  /** Autoscaling: the fleet starts at `replicas` groups and the autoscaler resizes it. */
  readonly autoscale?: AutoscaleOptions;
  /** Disaggregated serving: a prefill pool in front of the `replicas`, which decode. */
  readonly prefill?: PrefillSpec;
  /** The LoRA adapters each replica serves, when not every one serves every adapter. */
  readonly servableOf?: (replica: number) => readonly string[];
  /** Given what the pipeline learns before the first request: to restore it, or read it after. */
  readonly withLearned?: (learned: Learned) => void;
}
