/**
 * A scenario is everything a run depends on, as plain data: workload, fleet, engine limits,
 * client behaviour, seed. It is recorded verbatim in the report, so a report says how to
 * reproduce itself. The policy is kept apart: `compare` runs several over one scenario.
 */
import { refuseUnusedLimits, resolveScaleFlags } from '../core/autoscale/scale-options.ts';
import type { AutoscaleOptions } from './autoscaling.ts';
import { loadEnvelope } from './envelope-file.ts';
import { adapterNames, parseAdapterSpec } from './workload/adapter-spec.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { Ms } from '../core/request/units.ts';
import type { Learned } from '../core/estimate/learned.ts';
import type { ResolvedPolicy } from '../core/config/policy.ts';
import { refuseUnservedModels } from '../core/config/tenant-schema.ts';
import type { Report } from '../core/observe/report.ts';
import type { DecisionRecord } from '../core/observe/decision-record.ts';
import type { OutcomeRecord } from '../core/observe/outcome-record.ts';
import type { RequestOutcome } from '../core/observe/request-outcome.ts';
import type { EngineConfig } from '../engine/engine-types.ts';
import {
  ENGINE_DEFAULTS,
  buildEngineConfig,
  buildEngineProfile,
  plannedProfile,
  type EngineSpec,
} from '../engine/engine-spec.ts';
import { SeededRng } from '../runtime/seeded-rng.ts';
import { buildWorkload } from './workload/build-workload.ts';
import { WORKLOAD_DEFAULTS } from './workload/workload-options.ts';
import type { WorkloadDescription } from './workload/workload-description.ts';
import { simulate } from './simulation.ts';
import type { PrefillSpec } from './fleet.ts';
import { ConfigError } from '../core/errors.ts';
import { adapterPlacement } from '../core/fleet/adapter-placement.ts';
import { checkKvLink, DEFAULT_KV_LINK } from '../engine/kv-transfer.ts';
import type { RetryMode } from './client-behaviour.ts';

export interface ScenarioSpec extends EngineSpec {
  readonly seed: number;
  readonly trace?: string;
  readonly traceFormat?: string;
  readonly arrival: 'poisson' | 'gamma';
  readonly rate: number;
  readonly burstiness: number;
  readonly numRequests: number;
  readonly input: string;
  readonly output: string;
  readonly rateScale: number;
  readonly startS?: number;
  readonly durationS?: number;
  readonly tenants: string;
  readonly classes: string;
  readonly toolCalls?: string;
  readonly prefix?: string;
  readonly adapters?: string;
  /** `--n`: choices each request asks for. */
  readonly choices?: number;
  /** `--adapter-replicas`: each LoRA adapter is served by this many replicas (default: all). */
  readonly adapterReplicas?: number;
  /** Autoscaling (`--autoscaler`): the fleet starts at `minReplicas` (default `replicas`). */
  readonly autoscaler?: string;
  readonly minReplicas?: number;
  readonly maxReplicas?: number;
  /** Seconds, `120-240` or `180`: a new group's ready time, drawn per group. */
  readonly readyTime?: string;
  /** `--burst-headroom`: the multiple of forecast arrivals the groups are sized for. */
  readonly headroom?: number;
  /** `--capacity-envelope`: a file written by `goodput capacity --out`. */
  readonly capacityEnvelope?: string;
  /** `--prefix-reset`: seconds at which every ready replica's prefix cache goes cold. */
  readonly prefixResetAtS?: readonly number[];
  /** `--scale-freeze`: seconds FROM-TO in which the autoscaler's decisions are not taken. */
  readonly scaleFreezes?: readonly { readonly fromS: number; readonly toS: number }[];
  /** `--canary`: seconds FROM-TO in which one group's GPUs are held by a canary. */
  readonly canaries?: readonly { readonly fromS: number; readonly toS: number }[];
  /** `--scale-in-window`, seconds. */
  readonly scaleInWindowS?: number;
  /** A load shape for the arrivals (`--scenario diurnal-burst`). */
  readonly scenario?: string;
  /** Seconds at which the busiest ready group fails (`--fail-group`, repeatable). */
  readonly failGroupAtS?: readonly number[];
  readonly replicas: number;
  /** Disaggregated serving (`--prefill-replicas`): the prefill pool; `replicas` then decode. */
  readonly prefillReplicas?: number;
  /** `--prefill-replicas MIN-MAX`: the pool's ceiling under autoscaling. */
  readonly prefillMaxReplicas?: number;
  /** `--kv-link-gbps`: the link a prompt's KV crosses, per GPU. */
  readonly kvLinkGbps?: number;
  readonly clientTimeoutMs?: number;
  readonly maxAttempts: number;
  readonly retryMode: RetryMode;
  readonly backoffBaseMs: number;
  readonly backoffCapMs: number;
}

// A synthetic workload starts at 0 without saying so; the window start is a trace option.
const { startS: _windowStart, ...workloadDefaults } = WORKLOAD_DEFAULTS;

export const SCENARIO_DEFAULTS: Omit<ScenarioSpec, 'seed'> = {
  ...workloadDefaults,
  ...ENGINE_DEFAULTS,
  replicas: 1,
  maxAttempts: 1,
  retryMode: 'disciplined',
  backoffBaseMs: 500,
  backoffCapMs: 30_000,
};

/**
 * The engine every replica of the scenario runs: with `--adapters` and no `--lora-modules`, it
 * serves the adapters the workload's requests ask for.
 */
export function engineConfig(spec: ScenarioSpec): EngineConfig {
  if (spec.adapters === undefined || spec.loraModules !== undefined) return buildEngineConfig(spec);
  return buildEngineConfig({
    ...spec,
    loraModules: adapterNames(parseAdapterSpec(spec.adapters, '--adapters')),
  });
}

export interface RunHooks {
  readonly wallClock: Clock;
  readonly onProgress?: (simMs: Ms, finished: number) => void;
  readonly onDecision?: (record: DecisionRecord) => void;
  readonly onOutcome?: (outcome: RequestOutcome, atMs: Ms, good: boolean) => void;
  /** How each dispatched request ended (`outcome-record.ts`), beside the decision records. */
  readonly onOutcomeRecord?: (record: OutcomeRecord) => void;
  /** Given what the pipeline learns before the first request: to restore it, or read it after. */
  readonly withLearned?: (learned: Learned) => void;
}

export function runScenario(spec: ScenarioSpec, policy: ResolvedPolicy, hooks: RunHooks): Report {
  const rng = new SeededRng(spec.seed);
  const engine = engineConfig(spec);
  refuseUnservedModels(policy.tenants, [engine.model.name, ...(engine.loraModules ?? [])]);
  const profile = buildEngineProfile(spec);
  const planned = spec.slowdown === undefined ? undefined : plannedProfile(spec);
  // The spec carries the workload options under the workload's own names.
  const workload = buildWorkload(spec, rng.fork('workload'));
  if (engine.prefixCachedOnAllocation !== true) refuseChoices(spec, workload.describe);
  const autoscale = autoscaleOptions(spec);
  return simulate({
    seed: spec.seed,
    rng,
    policy,
    requests: workload.requests,
    replicas: autoscale?.minReplicas ?? spec.replicas,
    autoscale,
    ...(spec.adapterReplicas === undefined
      ? {}
      : {
          servableOf: adapterPlacement(
            engine.loraModules ?? [],
            autoscale?.minReplicas ?? spec.replicas,
            spec.adapterReplicas,
          ),
        }),
    ...(spec.failGroupAtS === undefined
      ? {}
      : { failGroupsAtMs: spec.failGroupAtS.map((s) => s * 1000) }),
    ...(spec.prefixResetAtS === undefined
      ? {}
      : { prefixResetsAtMs: spec.prefixResetAtS.map((s) => s * 1000) }),
    ...(spec.canaries === undefined ? {} : { canariesMs: msWindows(spec.canaries) }),
    ...prefillOptions(spec),
    engine,
    profile,
    ...(planned === undefined ? {} : { plannedProfile: planned }),
    client: {
      timeoutMs: spec.clientTimeoutMs,
      maxAttempts: spec.maxAttempts,
      retryMode: spec.retryMode,
      backoffBaseMs: spec.backoffBaseMs,
      backoffCapMs: spec.backoffCapMs,
    },
    // The engine as resolved: an unset limit is recorded as the version's default it took.
    scenario: {
      ...spec,
      profile: profile.name,
      maxModelLen: engine.maxModelLen,
      maxNumSeqs: engine.maxNumSeqs,
      maxBatchedTokens: engine.maxBatchedTokens,
      chunkedPrefill: engine.chunkedPrefill,
      schedulerSteps: engine.schedulerSteps,
      workload: workload.describe,
    },
    wallClock: hooks.wallClock,
    onProgress: hooks.onProgress,
    onDecision: hooks.onDecision,
    onOutcome: hooks.onOutcome,
    onOutcomeRecord: hooks.onOutcomeRecord,
    withLearned: hooks.withLearned,
  });
}

/**
 * Several choices of one prompt under a V0 engine version: refused, naming what asked for them.
 * V0 forks one sequence group after a shared prefill, which the engine model has not.
 */
function refuseChoices(spec: ScenarioSpec, workload: WorkloadDescription): void {
  const how =
    'the simulated engine serves several choices as vLLM V1 does: --engine-version vllm-v1';
  if ((spec.choices ?? 1) > 1)
    throw new ConfigError(
      '--n',
      `1 under --engine-version ${spec.engineVersion} (${how})`,
      spec.choices,
    );
  const most = workload.kind === 'trace' ? (workload.maxChoices ?? 1) : 1;
  if (most > 1)
    throw new ConfigError(
      '--engine-version',
      `vllm-v1 for a trace whose rows ask several choices, n up to ${most} (${how})`,
      spec.engineVersion,
    );
}

/** How often the autoscaler decides (simulated ms). */
const SCALE_TICK_MS = 5_000;

/** The autoscaling the spec asks for, checked; undefined without `--autoscaler`. */
function autoscaleOptions(spec: ScenarioSpec): AutoscaleOptions | undefined {
  if (spec.autoscaler === undefined) {
    refuseUnusedLimits(spec, 'without --autoscaler');
    if (spec.scaleFreezes !== undefined && spec.scaleFreezes.length > 0) {
      const w = spec.scaleFreezes[0];
      throw new ConfigError('--scale-freeze', 'unset without --autoscaler', `${w.fromS}-${w.toS}`);
    }
    return undefined;
  }
  const o = resolveScaleFlags({ ...spec, autoscaler: spec.autoscaler }, spec.replicas);
  const envelope =
    spec.capacityEnvelope === undefined ? undefined : loadEnvelope(spec.capacityEnvelope, spec);
  const freezes = msWindows(spec.scaleFreezes);
  const canaries = msWindows(spec.canaries);
  return {
    ...o,
    tickMs: SCALE_TICK_MS,
    ...(envelope === undefined ? {} : { envelope }),
    ...(freezes.length === 0 ? {} : { freezes }),
    ...(canaries.length === 0 ? {} : { canaries }),
  };
}

function msWindows(windows: readonly { fromS: number; toS: number }[] | undefined) {
  return (windows ?? []).map((w) => ({ fromMs: w.fromS * 1000, toMs: w.toS * 1000 }));
}

/** The prefill pool the spec asks for, checked; none without `--prefill-replicas`. */
function prefillOptions(spec: ScenarioSpec): { prefill?: PrefillSpec } {
  if (spec.prefillReplicas === undefined) {
    if (spec.kvLinkGbps !== undefined) {
      throw new ConfigError('--kv-link-gbps', 'unset without --prefill-replicas', spec.kvLinkGbps);
    }
    return {};
  }
  const link = checkKvLink({ ...DEFAULT_KV_LINK, gbps: spec.kvLinkGbps ?? DEFAULT_KV_LINK.gbps });
  const max = spec.prefillMaxReplicas ?? spec.prefillReplicas;
  if (max !== spec.prefillReplicas && spec.autoscaler === undefined) {
    throw new ConfigError(
      '--prefill-replicas',
      'one count without --autoscaler (a MIN-MAX range is what autoscaling keeps it in)',
      `${spec.prefillReplicas}-${max}`,
    );
  }
  return { prefill: { replicas: spec.prefillReplicas, maxReplicas: max, link } };
}
