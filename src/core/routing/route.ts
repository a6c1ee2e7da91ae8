/**
 * A placement decision, composed as llm-d's scheduler composes one: **filters** narrow the
 * replicas to those that may take the request, **scorers** rate each survivor in a documented
 * unit (lower is better), and a **picker** chooses among them by the weighted sum. Every part
 * is registered by name in its own table (`filters.ts`, `scorers.ts`, `pickers.ts`); a router
 * (`registry.ts`) is a named composition of them, and the dispatch strategy puts its own filters
 * (failover, held replicas, flow-control fit) in front. Rules every part keeps, checked by the
 * conformance suites: a filter never adds a replica and keeps the order it was given; a score
 * is finite and at least 0; a picker returns an index into the list it was given; all are
 * deterministic given their state and inputs, and a picker's state is plain data.
 */
import type { Demand } from '../request/demand.ts';
import type { LlmRequest } from '../request/request.ts';
import type { SloClass } from '../request/slo-classes.ts';
import type { Ms } from '../request/units.ts';
import type { ReplicaLedger } from '../fleet/replica-ledger.ts';
import type { ReplicaSnapshot } from '../fleet/replica-snapshot.ts';
import type { FlowControl } from './flow-control.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';

/** What routing weighs of a request (a queued ticket is one). */
export interface RouteRequest {
  readonly req: LlmRequest;
  readonly demand: Pick<Demand, 'kvTokens' | 'prefixHitTokens' | 'output'>;
  readonly cls: SloClass;
  /** A replica it should not go to while another can take it (its last attempt failed there); −1: none. */
  readonly avoid?: number;
  /** The step share it was admitted under: it is placed under at least that (`Ticket.gapShare`). */
  readonly gapShare?: number;
}

/** What a placement may read besides the request and the replicas. */
export interface RouteContext {
  readonly nowMs: Ms;
  readonly spec: FleetSpec;
  /** The control plane's own account of each replica (`../fleet/replica-ledger.ts`). */
  readonly ledger: ReplicaLedger;
  readonly flow: FlowControl;
  /** The request a replica is held for (no other work goes there), if any. */
  heldFor(replica: number): RouteRequest | undefined;
  /**
   * Prompt tokens of the request being placed that each replica's prefix cache is expected to
   * hold, by replica index (`prefix-index.ts`; all 0 without an index). Set by the router for
   * each placement.
   */
  hits: Float64Array;
  /** Blocks each replica's prefix index holds (the SGLang-like router's "smallest tree"). */
  cachedBlocks(replica: number): number;
}

export interface Filter {
  readonly name: string;
  /** One line: what it removes and why. */
  readonly description: string;
  /** Appends to `out` (empty) the members of `replicas` that may take `r`, in their order. */
  filter(
    r: RouteRequest,
    replicas: readonly ReplicaSnapshot[],
    ctx: RouteContext,
    out: ReplicaSnapshot[],
  ): void;
}

export interface Scorer {
  readonly name: string;
  /** The unit of its score (`ms`, `requests`, `ratio`), documented with its range in README.md. */
  readonly unit: string;
  /** How `replica` would serve `r`: finite, ≥ 0, lower is better. */
  score(r: RouteRequest, replica: ReplicaSnapshot, ctx: RouteContext): number;
}

export interface Picker<S = unknown> {
  readonly name: string;
  initState(seed: number): S;
  /**
   * An index in [0, n) into `replicas`: the replica to place on, given each one's weighted score
   * (all 0 for a router without scorers).
   */
  pick(
    state: S,
    scores: Float64Array,
    replicas: readonly ReplicaSnapshot[],
    r: RouteRequest,
    ctx: RouteContext,
  ): number;
}

/** A scorer in a router, with its weight; `minMax` rescales its scores over the survivors to [0, 1] first (as llm-d's scorers do). */
export interface WeightedScorer {
  readonly name: string;
  readonly weight: number;
  readonly minMax?: boolean;
}

/** A router: the composition a policy names (`routing.type`). */
export interface RouterSpec {
  readonly type: string;
  /** One line: what it models. */
  readonly description: string;
  readonly filters: readonly string[];
  readonly scorers: readonly WeightedScorer[];
  readonly picker: string;
  /** Whether it reads the prefix index (one is kept only for a router that does). */
  readonly prefix?: boolean;
  /**
   * Whether its scores price a slow step's stall themselves: under flow control it then sees
   * every replica that may take the request (`flow-fit-any`), not only the fast ones.
   */
  readonly pricesStalls?: boolean;
}
