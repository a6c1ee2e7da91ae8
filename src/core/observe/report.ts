/**
 * The run report: one JSON document with snake_case keys, shared by `goodput simulate`,
 * `compare` and (later) the gateway's summaries. Numbers are rounded (ms to the microsecond,
 * ratios to 1e-6) so reports diff cleanly; key order is fixed so equal runs are byte-identical.
 */
import type { QueueSpreadReport } from './queue-spread.ts';
import type { Ms } from '../request/units.ts';
import type { SloClass, SloClassName } from '../request/slo-classes.ts';
import type { OutcomeAccumulator, GroupCounts } from './outcome-accumulator.ts';
import { SERVICE_WEIGHTS } from './outcome-accumulator.ts';
import { summarize, type Summary } from '../stats/percentile.ts';
import { fairnessReport, type ContractRecord } from './fairness-report.ts';
import type { VirtualTokenCounters } from '../queueing/virtual-token-counter.ts';

export interface ReportContext {
  readonly seed: number;
  readonly policy: string;
  readonly policyRevision: string;
  readonly scenario: Record<string, unknown>;
  readonly durationMs: Ms;
  readonly classes: Readonly<Record<SloClassName, SloClass>>;
  /** Pooled token gaps of completed requests. */
  readonly itl: Summary;
  readonly fleet: {
    readonly replicas: number;
    readonly gpusPerReplica: number;
    /** ∫ ready replicas dt, in ms. */
    readonly readyReplicaMs: number;
    /** ∫ replicas holding GPUs dt (starting, ready, draining), in ms; the ready time when absent. */
    readonly heldReplicaMs?: number;
    /** Group failures, when the run injects them: requests moved elsewhere, streams cut. */
    readonly failures?: {
      readonly groups: number;
      /** Requests not yet streaming, taken by admission again for another replica. */
      readonly failovers: number;
      /** Streams under way, resumed on another replica (prompt and streamed tokens recomputed). */
      readonly streams_resumed: number;
      readonly recomputed_tokens: number;
      /**
       * Streams under way, ended failed: several choices (no one rest of them to ask for), or a
       * rest admission refused.
       */
      readonly streams_lost?: number;
    };
    /** Canaries, when the run has them: windows, and the group-seconds their GPUs were held. */
    readonly canary?: { readonly windows: number; readonly held_s: number };
    /** Prefix-cache cold resets, when the run injects them: how many, and the blocks dropped. */
    readonly prefixResets?: { readonly resets: number; readonly dropped_blocks: number };
    /**
     * Disaggregated serving: the prefill pool (its GPUs in `heldReplicaMs`) and the prompts' KV
     * it sent the replicas.
     */
    readonly prefill?: {
      /** At the start (the floor under autoscaling). */
      readonly replicas: number;
      /** ∫ ready prefill groups dt, in ms. */
      readonly readyMs: number;
      readonly transfers: number;
      readonly bytes: number;
      readonly ms: Ms;
      /** Prompt tokens the pool was asked to compute, and what its prefix caches held of them. */
      readonly promptTokens: number;
      readonly prefixHitTokens: number;
    };
    readonly kvCapacityTokens: number;
  };
  readonly engine: {
    readonly steps: number;
    readonly preemptions: number;
    readonly preemptionsRecompute: number;
    readonly preemptionsSwap: number;
    readonly preemptionsKeep: number;
    /** Decodes that sat a step out over a per-iteration decode budget; undefined: no budget. */
    readonly decodesDeferred?: number;
    /** Tokens whose KV recompute preemptions threw away. */
    readonly recomputedTokens: number;
    /** Bytes moved over the host link by swap preemptions and tool pauses, out and in. */
    readonly swappedBytes: number;
    readonly toolPausesKeep: number;
    readonly toolPausesSwap: number;
    readonly toolPausesDrop: number;
    readonly toolPausedMs: number;
    readonly toolResumes: number;
    readonly prefixHitTokens: number;
    readonly promptTokens: number;
    readonly kvUsedBlocksAtEnd: number;
  };
  /** Time-average requests in the fleet (Little's L, measured independently of latencies). */
  readonly meanInSystem: number;
  readonly client: {
    readonly timeouts: number;
    readonly retries: number;
    /** Turns kept for refused requests, and how they ended (present when any was kept). */
    readonly keptTurns?: {
      readonly kept: number;
      readonly claimed: number;
      readonly lapsed: number;
    };
  };
  /** How good the demand estimator's predictions were. */
  readonly estimate: unknown;
  /** Each class's queue budget at the end of the run (classes with a TTFT objective). */
  readonly queueBudgets: Readonly<
    Record<string, { budgetMs: number | null; serviceP99Ms: number | null; samples: number }>
  >;
  readonly sim: { readonly wallMs: number; readonly events: number };
  /** The queue's order and the counters that kept it. */
  /** Autoscaling, when on: what scaled how, and a sample per tick. */
  readonly autoscale?: Readonly<Record<string, unknown>>;
  /** The router, and how it spread work: the prefix hit rate and queue-work spread over the run. */
  readonly routing: { readonly type: string; readonly spread: QueueSpreadReport };
  readonly fairness: {
    readonly order: string;
    readonly vtc: VirtualTokenCounters;
    readonly contracts: ContractRecord;
  };
}

const r3 = (x: number) => Math.round(x * 1e3) / 1e3;
const r6 = (x: number) => Math.round(x * 1e6) / 1e6;
const ratio = (a: number, b: number) => (b > 0 ? r6(a / b) : 0);

function latency(s: Summary) {
  return {
    mean: r3(s.mean),
    p50: r3(s.p50),
    p90: r3(s.p90),
    p99: r3(s.p99),
    max: r3(s.max),
    count: s.count,
  };
}

function sum(map: Map<string, number>): number {
  let n = 0;
  for (const v of map.values()) n += v;
  return n;
}

function sortedObject<V>(map: Map<string, V>): Record<string, V> {
  return Object.fromEntries([...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export function buildReport(acc: OutcomeAccumulator, ctx: ReportContext) {
  const seconds = ctx.durationMs / 1000;
  const gpuSeconds =
    ((ctx.fleet.heldReplicaMs ?? ctx.fleet.readyReplicaMs) / 1000) * ctx.fleet.gpusPerReplica;
  const total = acc.total;
  const byClass = new Map<string, ReturnType<typeof classEntry>>();
  for (const [name, g] of acc.byClass) {
    byClass.set(name, classEntry(g, acc.ttftByClass.get(name)?.values() ?? [], ctx.classes[name]));
  }
  const tenants = new Map<string, ReturnType<typeof tenantEntry>>();
  for (const [name, g] of acc.byTenant) tenants.set(name, tenantEntry(g, total.service));
  return {
    seed: ctx.seed,
    policy: ctx.policy,
    policy_revision: ctx.policyRevision,
    scenario: ctx.scenario,
    duration_s: r6(seconds),
    offered: { requests: total.offered, input_tokens: acc.offeredInputTokens },
    admission: {
      offered: total.offered,
      admitted: total.admitted,
      deferred: acc.deferred,
      deferred_expired: acc.failReasons.get('deferred_expired') ?? 0,
      degraded: sum(acc.degradedByLevel),
      degraded_by_level: sortedObject(acc.degradedByLevel),
      rejected: acc.states.rejected,
      reject_reasons: sortedObject(acc.rejectReasons),
      expired_after_admission: acc.failReasons.get('deadline_expired') ?? 0,
      queue_budget_ms: Object.fromEntries(
        Object.entries(ctx.queueBudgets).map(([cls, b]) => [
          cls,
          {
            budget: b.budgetMs === null ? null : r3(b.budgetMs),
            service_p99: b.serviceP99Ms === null ? null : r3(b.serviceP99Ms),
            samples: b.samples,
          },
        ]),
      ),
    },
    completed: acc.states.completed,
    failed: acc.states.failed,
    cancelled: acc.states.cancelled,
    running: acc.states.running,
    fail_reasons: sortedObject(acc.failReasons),
    latency_ms: {
      ttft: latency(summarize(acc.ttft.values())),
      tpot: latency(summarize(acc.tpot.values())),
      itl: latency(ctx.itl),
      e2el: latency(summarize(acc.e2e.values())),
      max_stall: latency(summarize(acc.maxStall.values())),
      ttft_parts: {
        queue: latency(summarize(acc.queue.values())),
        prefill: latency(summarize(acc.prefill.values())),
        first_decode: latency(summarize(acc.firstDecode.values())),
      },
    },
    slo: {
      good: total.good,
      attainment_admitted: ratio(total.good, total.admitted),
      attainment_offered: ratio(total.good, total.offered),
      by_class: sortedObject(byClass),
    },
    goodput: {
      requests_per_s: ratio(total.good, seconds),
      tokens_per_s: ratio(total.goodOutputTokens, seconds),
    },
    throughput: {
      requests_per_s: ratio(acc.states.completed, seconds),
      output_tokens_per_s: ratio(acc.outputTokens, seconds),
    },
    estimate: ctx.estimate,
    tenants: sortedObject(tenants),
    tenant_service_weights: SERVICE_WEIGHTS,
    fairness: fairnessReport(
      ctx.fairness.order,
      ctx.fairness.vtc,
      acc.byClass,
      ctx.fairness.contracts,
    ),
    client: {
      attempts: acc.attempts,
      retries: ctx.client.retries,
      timeouts: ctx.client.timeouts,
      retry_amplification: ratio(acc.attempts, total.offered),
      ...(ctx.client.keptTurns === undefined ? {} : { kept_turns: ctx.client.keptTurns }),
    },
    engine: {
      steps: ctx.engine.steps,
      preemptions: ctx.engine.preemptions,
      prefix_hit_tokens: ctx.engine.prefixHitTokens,
      prefix_hit_rate: ratio(ctx.engine.prefixHitTokens, ctx.engine.promptTokens),
      kv_used_blocks_at_end: ctx.engine.kvUsedBlocksAtEnd,
      ...(ctx.engine.decodesDeferred === undefined
        ? {}
        : { decodes_deferred: ctx.engine.decodesDeferred }),
    },
    routing: {
      type: ctx.routing.type,
      prefix_hit_rate: ratio(ctx.engine.prefixHitTokens, ctx.engine.promptTokens),
      ...ctx.routing.spread,
    },
    /** How engines gave KV and compute back: preemptions by mode, and tool-call pauses. */
    preemption: {
      recompute: ctx.engine.preemptionsRecompute,
      swap: ctx.engine.preemptionsSwap,
      keep: ctx.engine.preemptionsKeep,
      recomputed_tokens: ctx.engine.recomputedTokens,
      swapped_bytes: ctx.engine.swappedBytes,
      tool_pauses: {
        keep: ctx.engine.toolPausesKeep,
        swap: ctx.engine.toolPausesSwap,
        drop: ctx.engine.toolPausesDrop,
        paused_ms_mean: ratio(ctx.engine.toolPausedMs, ctx.engine.toolResumes),
      },
    },
    fleet: {
      replicas: ctx.fleet.replicas,
      gpus_per_replica: ctx.fleet.gpusPerReplica,
      gpu_seconds: r3(gpuSeconds),
      replicas_ready_mean:
        ctx.durationMs > 0 ? r6(ctx.fleet.readyReplicaMs / ctx.durationMs) : ctx.fleet.replicas,
      kv_capacity_tokens: ctx.fleet.kvCapacityTokens,
      mean_requests_in_system: r6(ctx.meanInSystem),
      ...(ctx.fleet.failures === undefined ? {} : { failures: ctx.fleet.failures }),
      ...(ctx.fleet.prefixResets === undefined ? {} : { prefix_resets: ctx.fleet.prefixResets }),
      ...(ctx.fleet.canary === undefined ? {} : { canary: ctx.fleet.canary }),
      ...(ctx.fleet.prefill === undefined
        ? {}
        : { prefill: prefillReport(ctx.fleet.prefill, ctx.durationMs) }),
    },
    cost: { gpu_seconds_per_good_request: total.good > 0 ? r6(gpuSeconds / total.good) : null },
    ...(ctx.autoscale === undefined ? {} : { autoscale: ctx.autoscale }),
    sim: {
      wall_ms: Math.round(ctx.sim.wallMs),
      events: ctx.sim.events,
      events_per_s: ctx.sim.wallMs > 0 ? Math.round(ctx.sim.events / (ctx.sim.wallMs / 1000)) : 0,
      speedup: ctx.sim.wallMs > 0 ? Math.round(ctx.durationMs / ctx.sim.wallMs) : 0,
    },
  };
}

export type Report = ReturnType<typeof buildReport>;

function tenantEntry(g: GroupCounts, totalService: number) {
  return {
    requests: g.offered,
    admitted: g.admitted,
    good: g.good,
    service: g.service,
    share: ratio(g.service, totalService),
    attainment: ratio(g.good, g.offered),
  };
}

function classEntry(g: GroupCounts, ttft: ArrayLike<number>, c: SloClass | undefined) {
  return {
    requests: g.offered,
    admitted: g.admitted,
    completed: g.completed,
    good: g.good,
    attainment_admitted: ratio(g.good, g.admitted),
    attainment_offered: ratio(g.good, g.offered),
    admitted_misses: Object.fromEntries(Object.entries(g.admittedMisses).sort()),
    preemptions: g.preemptions,
    ttft_ms: latency(summarize(ttft)),
    objectives_ms: objectives(c),
  };
}

function objectives(c: SloClass | undefined) {
  const o = c?.objectives ?? {};
  return {
    ttft: o.ttftMs ?? null,
    itl_p99: o.itlP99Ms ?? null,
    tpot: o.tpotMs ?? null,
    e2e: o.e2eMs ?? null,
  };
}

/** The prefill pool of a disaggregated fleet, and the KV it sent. */
function prefillReport(p: NonNullable<ReportContext['fleet']['prefill']>, durationMs: Ms) {
  return {
    replicas: p.replicas,
    replicas_ready_mean: durationMs > 0 ? r6(p.readyMs / durationMs) : p.replicas,
    kv_transfers: p.transfers,
    kv_transferred_gib: r3(p.bytes / 1024 ** 3),
    kv_transfer_ms_mean: ratio(p.ms, p.transfers),
    prefix_hit_rate: ratio(p.prefixHitTokens, p.promptTokens),
  };
}
