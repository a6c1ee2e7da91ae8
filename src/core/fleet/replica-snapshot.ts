import type { Tokens } from '../request/units.ts';
import type { FleetSpec } from './fleet-spec.ts';
import type { ReplicaLedger } from './replica-ledger.ts';

/** What routing may know of a replica at decision time: the control plane's own counts plus the engine's reported load. */
export interface ReplicaSnapshot {
  readonly index: number;
  /** Requests this control plane dispatched there that have not finished. */
  readonly inFlight: number;
  readonly running: number;
  readonly waiting: number;
  /**
   * Requests running or waiting there that this control plane did not send — another gateway
   * replica's, a client's of its own — as the replica's last report counted them; each holds
   * one of its `max_num_seqs` seats. Undefined: none (the simulator's fleet, the embedded one).
   */
  readonly others?: number;
  /** KV blocks in use / total, in [0, 1]. */
  readonly kvUsage: number;
  /**
   * The tokens its KV cache holds, as its engine reports it (vLLM's `cache_config_info`);
   * undefined: the fleet's `replicaKvTokens`, every replica alike (the simulator's fleet).
   */
  readonly kvCapacityTokens?: Tokens;
  /**
   * LoRA adapters resident in its GPU slots: a vLLM's as its `lora_requests_info` running
   * adapters have shown them (`gateway/lora-residency.ts`); undefined when it reports none or
   * serves none.
   */
  readonly loras?: readonly string[];
  /** LoRA adapters it serves at all; undefined: every adapter the fleet serves. */
  readonly servable?: readonly string[];
  /** Share of its recent attempts that failed, 0–1, when the host tracks it. */
  readonly failureRate?: number;
  /**
   * On trial (its circuit breaker half-open): it takes one request, then no more until that one
   * has told whether it is healthy again.
   */
  readonly probe?: boolean;
  /**
   * Disaggregated serving: the prompts its prefill pool has still to compute, in steps of that
   * pool — pending prompt tokens over (prefill replicas × a step's token budget).
   */
  readonly prefillBacklogSteps?: number;
}

/**
 * What a replica reports beyond this control plane's own ledger: its KV cache's usage, its
 * capacity where it says, and the requests there of others.
 */
export type ReplicaKv = Pick<ReplicaSnapshot, 'kvUsage' | 'kvCapacityTokens' | 'others'>;

/** The tokens `r`'s KV cache holds: its own report, else the fleet's. */
export function kvCapacityOf(
  r: Pick<ReplicaSnapshot, 'kvCapacityTokens'>,
  spec: Pick<FleetSpec, 'replicaKvTokens'>,
): Tokens {
  return r.kvCapacityTokens ?? spec.replicaKvTokens;
}

/**
 * The KV `r` holds, in tokens: the larger of what this control plane reserved there and what
 * the engine reports in use (a share of its capacity).
 */
export function kvUsedOf(
  r: ReplicaKv,
  reservedTokens: Tokens,
  spec: Pick<FleetSpec, 'replicaKvTokens'>,
): Tokens {
  return Math.max(reservedTokens, r.kvUsage * kvCapacityOf(r, spec));
}

/** The KV (tokens) the replica with the most left has free after what is reserved or in use there. */
export function mostFreeKv(
  replicas: readonly ReplicaSnapshot[],
  ledger: ReplicaLedger,
  spec: Pick<FleetSpec, 'replicaKvTokens'>,
): Tokens {
  let most = 0;
  for (const r of replicas) {
    const used = kvUsedOf(r, ledger.replicas[r.index].reservedKvTokens, spec);
    most = Math.max(most, kvCapacityOf(r, spec) - used);
  }
  return most;
}

/** The largest KV cache (tokens) among `replicas`; with none, the spec's. */
export function largestKv(
  replicas: readonly ReplicaSnapshot[],
  spec: Pick<FleetSpec, 'replicaKvTokens'>,
): Tokens {
  let largest = 0;
  for (const r of replicas) largest = Math.max(largest, kvCapacityOf(r, spec));
  return largest > 0 ? largest : spec.replicaKvTokens;
}

/** Whether `r` serves `adapter`; a request for the base model (no adapter) goes anywhere. */
export function serves(r: ReplicaSnapshot, adapter: string | undefined): boolean {
  return adapter === undefined || r.servable === undefined || r.servable.includes(adapter);
}

/** The replicas that serve `adapter`: `replicas` itself when every one does (or none is asked). */
export function servingOnly(
  replicas: readonly ReplicaSnapshot[],
  adapter: string | undefined,
): readonly ReplicaSnapshot[] {
  return adapter === undefined || replicas.every((r) => serves(r, adapter))
    ? replicas
    : replicas.filter((r) => serves(r, adapter));
}
