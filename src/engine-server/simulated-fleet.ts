/**
 * The simulated engines of an embedded fleet, one per replica, each with its own fork of the
 * seed: the same fleet whether it steps on the gateway's loop or on a thread of its own.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { Timers } from '../core/ports/timers.ts';
import type { EngineConfig } from '../engine/engine-types.ts';
import type { TimingProfile } from '../engine/timing/profile.ts';
import { SeededRng } from '../runtime/seeded-rng.ts';
import { replicaConfigs } from '../core/fleet/adapter-placement.ts';
import { shareGptSampler } from './engine-app.ts';
import { NO_FAULTS } from './request-plan.ts';
import { SimulatedBackend } from './simulated-backend.ts';

export interface SimulatedFleetOptions {
  readonly config: EngineConfig;
  readonly profile: TimingProfile;
  readonly replicas: number;
  readonly seed: number;
  readonly clock: Clock;
  readonly timers: Timers;
  /** Each LoRA adapter loaded on this many of the replicas (`adapterPlacement`); default all. */
  readonly adapterReplicas?: number;
}

export function simulatedFleet(o: SimulatedFleetOptions): SimulatedBackend[] {
  const rng = new SeededRng(o.seed);
  const configOf = replicaConfigs(o.config, o.replicas, o.adapterReplicas);
  return Array.from(
    { length: o.replicas },
    (_, i) =>
      new SimulatedBackend({
        config: configOf(i),
        profile: o.profile,
        clock: o.clock,
        timers: o.timers,
        rng: rng.fork(`replica-${i}`),
        faults: NO_FAULTS,
        lengths: shareGptSampler(),
      }),
  );
}
