/**
 * The budget gate: a tenant's own limits that need the pipeline's estimates (sessions, GPU time,
 * agent-tree budgets) as a gate; tokens, concurrency and retries are the tenant ledger's, taken
 * at the door. Main rule: a thin wrapper — `check` is `TenantBudgets.check` and never
 * mutates; the admission controller reaches the state through `commit` and `settle` (or
 * `budgets` directly). Every refusal is a 429 with a Retry-After; see tenant-budgets.ts.
 */
import type { GateInput, GateVerdict } from '../gate.ts';
import type { LlmRequest } from '../../request/request.ts';
import type { Ms, Tokens } from '../../request/units.ts';
import { TenantBudgets } from './tenant-budgets.ts';

export const BUDGET_GATE = 'budget';

export interface BudgetGate {
  readonly type: typeof BUDGET_GATE;
  readonly budgets: TenantBudgets;
  check(input: GateInput): GateVerdict;
  /** The request was admitted: charge its estimates. */
  commit(input: GateInput): void;
  /** The request ended: replace its estimates by actuals and release its slot. */
  settle(req: LlmRequest, outputTokens: Tokens, actualGpuMs: Ms, nowMs: Ms): void;
}

export function budgetGate(): BudgetGate {
  const budgets = new TenantBudgets();
  return {
    type: BUDGET_GATE,
    budgets,
    check: (input) => budgets.check(input),
    commit: (input) => budgets.commit(input),
    settle: (req, outputTokens, actualGpuMs, nowMs) =>
      budgets.settle(req, outputTokens, actualGpuMs, nowMs),
  };
}
