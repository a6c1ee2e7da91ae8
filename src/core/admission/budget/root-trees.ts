/**
 * Agent trees: every request sharing a `rootId` draws on one `RootBudget` (branches, tokens, wall
 * time from the root's arrival). Main rule: only children are refused — the root opens the tree
 * and its own tokens count toward it, but there is nothing yet for it to overdraw. A child whose
 * root is unknown (never seen, or already forgotten) opens nothing and is outside tree
 * accounting, as if it were its own root: its tree's wall clock has no known origin. The
 * tenant's token and GPU buckets still bound it. Only `join`, `leave` and `prune` mutate, and
 * only from commit and settle.
 */
import type { LlmRequest } from '../../request/request.ts';
import type { RootBudget } from '../../request/tenant.ts';
import type { Ms, Tokens } from '../../request/units.ts';

export interface RootTree {
  /** The root's arrival: the origin of `maxWallMs`. */
  openedMs: Ms;
  /** Children committed so far (the root not counted). */
  branches: number;
  /** Estimates of requests in flight plus actuals of those settled. */
  tokens: Tokens;
  inFlight: number;
  /** Last commit or settle touching the tree. */
  lastActiveMs: Ms;
}

export type TreeBreach = 'branches' | 'tokens' | 'wall';

/** Where a request sits: the tree key, whether it draws as a child, and the live tree if any. */
export interface TreeSeat {
  readonly key: string;
  readonly child: boolean;
  /** Always set for a child; undefined for a root whose tree is not open yet. */
  readonly tree: RootTree | undefined;
}

/**
 * A tree is remembered while it has requests in flight, and afterwards for one window past the
 * later of its last activity and its wall deadline — long enough that late children are refused
 * for the wall, bounded so that memory holds only recently active trees.
 */
export function isLive(tree: RootTree, budget: RootBudget, windowMs: Ms, nowMs: Ms): boolean {
  if (tree.inFlight > 0) return true;
  const deadline = tree.openedMs + (budget.maxWallMs ?? 0);
  return nowMs < Math.max(tree.lastActiveMs, deadline) + windowMs;
}

/** The seat of `req`, or undefined when it is outside tree accounting. */
export function seatOf(
  req: LlmRequest,
  trees: ReadonlyMap<string, RootTree>,
  budget: RootBudget,
  windowMs: Ms,
  nowMs: Ms,
): TreeSeat | undefined {
  if (req.rootId === undefined) return undefined;
  const tree = liveTree(trees, req.rootId, budget, windowMs, nowMs);
  if (req.parentId === undefined || req.id === req.rootId) {
    return { key: req.rootId, child: false, tree };
  }
  return tree === undefined ? undefined : { key: req.rootId, child: true, tree };
}

/** The tree under `key` if it is still live; a stale one not yet pruned counts as absent. */
export function liveTree(
  trees: ReadonlyMap<string, RootTree>,
  key: string,
  budget: RootBudget,
  windowMs: Ms,
  nowMs: Ms,
): RootTree | undefined {
  const tree = trees.get(key);
  return tree !== undefined && isLive(tree, budget, windowMs, nowMs) ? tree : undefined;
}

/** Which limit a child needing `tokens` would break, checked wall first (it never recovers). */
export function breachOf(
  tree: RootTree,
  budget: RootBudget,
  tokens: Tokens,
  nowMs: Ms,
): TreeBreach | undefined {
  if (budget.maxWallMs !== undefined && nowMs >= tree.openedMs + budget.maxWallMs) return 'wall';
  if (budget.maxBranches !== undefined && tree.branches >= budget.maxBranches) return 'branches';
  if (budget.maxTokens !== undefined && tree.tokens + tokens > budget.maxTokens) return 'tokens';
  return undefined;
}

/**
 * Records an admitted request in its seat's tree. A root opens a tree at its arrival when none
 * is live (replacing a stale one), or joins the live one — a repeated root keeps the original
 * wall clock; a child counts one branch.
 */
export function join(
  trees: Map<string, RootTree>,
  seat: TreeSeat,
  req: LlmRequest,
  tokens: Tokens,
  nowMs: Ms,
): void {
  const tree = seat.tree;
  if (tree === undefined) {
    const opened = { openedMs: req.arrivalMs, branches: 0, tokens, inFlight: 1 };
    trees.set(seat.key, { ...opened, lastActiveMs: nowMs });
    return;
  }
  if (seat.child) tree.branches += 1;
  tree.tokens += tokens;
  tree.inFlight += 1;
  tree.lastActiveMs = Math.max(tree.lastActiveMs, nowMs);
}

/** A request of the tree ended: its estimate is replaced by its actual tokens. */
export function leave(tree: RootTree, estimated: Tokens, actual: Tokens, nowMs: Ms): void {
  tree.tokens += actual - estimated;
  tree.inFlight = Math.max(0, tree.inFlight - 1);
  tree.lastActiveMs = Math.max(tree.lastActiveMs, nowMs);
}

/** Forgets trees that are no longer live; decisions do not depend on when this runs. */
export function prune(
  trees: Map<string, RootTree>,
  budget: RootBudget,
  windowMs: Ms,
  nowMs: Ms,
): void {
  for (const [key, tree] of trees) {
    if (!isLive(tree, budget, windowMs, nowMs)) trees.delete(key);
  }
}
