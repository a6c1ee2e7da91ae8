/**
 * What one simulated run reports, assembled from the parts that ran it: the outcomes, the
 * pooled token gaps, the fleet's GPU time and engine counters, the capacity events, the
 * autoscaler, the queue spread, the pipeline's fairness accounts and what it learned. Main
 * rule: a section a run did not use (autoscaling, a decode budget) is left out, so the reports
 * of runs without it stay byte-identical.
 */
import type { KeptTurns } from '../core/queueing/kept-turns.ts';
import type { Pipeline } from '../core/pipeline.ts';
import type { OutcomeAccumulator } from '../core/observe/outcome-accumulator.ts';
import { buildReport, type Report } from '../core/observe/report.ts';
import type { Summary } from '../core/stats/percentile.ts';
import type { Ms } from '../core/request/units.ts';
import { SLO_CLASS_NAMES } from '../core/request/slo-classes.ts';
import { kvBytesPerToken } from '../engine/hardware.ts';
import type { CapacityEvents } from './capacity-events.ts';
import type { Fleet } from './fleet.ts';
import type { FleetScaling } from './fleet-scaling.ts';
import type { RequestTracker } from './request-tracker.ts';
import type { SimulationOptions } from './simulation.ts';
import type { SpreadSampler } from './spread-sampler.ts';

export interface RunParts {
  readonly opts: SimulationOptions;
  readonly durationMs: Ms;
  readonly accumulator: OutcomeAccumulator;
  /** The pooled token gaps, less those of requests that did not complete. */
  readonly itl: Summary;
  readonly fleet: Fleet;
  readonly events: CapacityEvents;
  readonly scaling: FleetScaling | null;
  readonly spread: SpreadSampler;
  readonly pipeline: Pipeline<RequestTracker>;
  readonly client: { readonly timeouts: number; readonly retries: number };
  /** Wall-clock figures: the only part of a report that differs between identical runs. */
  readonly sim: { readonly wallMs: number; readonly events: number };
}

export function runReport(run: RunParts): Report {
  const { opts, durationMs, fleet, events, scaling, pipeline } = run;
  const engine = fleet.stats();
  return buildReport(run.accumulator, {
    seed: opts.seed,
    policy: opts.policy.name,
    policyRevision: opts.policy.revision,
    scenario: opts.scenario,
    durationMs,
    classes: opts.policy.classes,
    itl: run.itl,
    fleet: {
      replicas: opts.replicas,
      gpusPerReplica: opts.engine.tp,
      // A canary's GPUs are held for its window, outside the pool.
      ...fleet.gpuTime(durationMs, scaling !== null, events.canaryMs(durationMs)),
      kvCapacityTokens: fleet.kvCapacityTokens,
      ...events.report(durationMs, fleet.failures),
    },
    ...(scaling === null ? {} : { autoscale: scaling.report(durationMs) }),
    engine: {
      ...engine,
      // Reported where a decode budget is set (the reports of runs without one stay as they were).
      decodesDeferred:
        opts.engine.decodeTokenBudget === undefined ? undefined : engine.decodesDeferred,
      swappedBytes:
        engine.swapTransferBlocks * opts.engine.blockSize * kvBytesPerToken(opts.engine.model),
      kvUsedBlocksAtEnd: fleet.kvUsedBlocks(),
    },
    meanInSystem: fleet.meanInSystem(durationMs),
    routing: { type: opts.policy.routing.type, spread: run.spread.report() },
    fairness: {
      order: opts.policy.queueing.order,
      vtc: pipeline.vtc,
      contracts: {
        workByClass: pipeline.dispatcher.workByClass,
        passes: pipeline.dispatcher.passes,
        classes: opts.policy.classes,
      },
    },
    client: { ...run.client, keptTurns: keptTurns(pipeline.learned.turns) },
    estimate: {
      ...pipeline.learned.errors.summary(),
      wait_calibration: pipeline.learned.waitCalibration.summary(),
      // Absent from a cold start's report: a run from saved state says what it started from.
      ...(pipeline.learned.restored === undefined ? {} : { restored: pipeline.learned.restored }),
    },
    queueBudgets: Object.fromEntries(
      SLO_CLASS_NAMES.filter((c) => opts.policy.classes[c].objectives.ttftMs !== undefined).map(
        (c) => [c, pipeline.learned.queueBudgets.of(c)],
      ),
    ),
    sim: run.sim,
  });
}

/** The turns kept for refused requests and how they ended; undefined when none was kept. */
function keptTurns(t: KeptTurns | undefined) {
  if (t === undefined || t.keptTotal === 0) return undefined;
  return { kept: t.keptTotal, claimed: t.claimed, lapsed: t.lapsed };
}
