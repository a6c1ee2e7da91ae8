/**
 * What the budget gate remembers about one tenant, and its JSON-serialisable snapshot. Main
 * rule: everything here is plain data — the GPU bucket, sessions, per-request commitments and agent
 * trees — so state can be logged, compared in tests and replayed. Memory is bounded by requests
 * in flight, sessions in flight and recently active trees.
 */
import type { TenantQuotas } from '../../request/tenant.ts';
import type { Ms, Tokens } from '../../request/units.ts';
import type { TokenBucket } from './token-bucket.ts';
import type { RootTree } from './root-trees.ts';

/** What admitting one request charged, kept by request id so settle can correct it exactly once. */
export interface Commitment {
  readonly session: string | null;
  /** Prompt tokens of the request as served (after any degradation). */
  readonly inputTokens: Tokens;
  /** Estimated tokens, charged to the tree. */
  readonly tokens: Tokens;
  /** What was taken from the GPU-time bucket; null where the tenant had no such quota at commit. */
  readonly gpuMsTaken: Ms | null;
  readonly treeKey: string | null;
}

export interface TenantState {
  /** Quotas as of the last commit: settle has no policy at hand but must refill correctly. */
  quotas: TenantQuotas;
  /** Null until a request is charged; an absent bucket counts as full. */
  gpu: TokenBucket | null;
  /** Session → requests in flight; a session leaves the map when its count reaches 0. */
  readonly sessions: Map<string, number>;
  readonly commitments: Map<string, Commitment>;
  readonly trees: Map<string, RootTree>;
  /** Stale trees are swept at most once a window, on a commit at or after this time. */
  nextPruneMs: Ms;
}

export interface TenantSnapshot {
  readonly quotas: TenantQuotas;
  readonly gpu: TokenBucket | null;
  readonly sessions: Readonly<Record<string, number>>;
  readonly commitments: Readonly<Record<string, Commitment>>;
  readonly trees: Readonly<Record<string, RootTree>>;
  readonly nextPruneMs: Ms;
}

export function newTenantState(quotas: TenantQuotas, nowMs: Ms): TenantState {
  return {
    quotas,
    gpu: null,
    sessions: new Map(),
    commitments: new Map(),
    trees: new Map(),
    nextPruneMs: nowMs + quotas.windowMs,
  };
}

/** A deep copy: later changes to the state never show through an earlier snapshot. */
export function snapshotOf(state: TenantState): TenantSnapshot {
  return {
    quotas: { ...state.quotas },
    gpu: state.gpu === null ? null : { ...state.gpu },
    sessions: Object.fromEntries(state.sessions),
    commitments: Object.fromEntries([...state.commitments].map(([id, c]) => [id, { ...c }])),
    trees: Object.fromEntries([...state.trees].map(([key, t]) => [key, { ...t }])),
    nextPruneMs: state.nextPruneMs,
  };
}
