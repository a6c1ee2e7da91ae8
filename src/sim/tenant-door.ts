/**
 * The tenant-accounting port at the simulated door, as the gateway has it (its in-memory store
 * wraps this same ledger): an attempt's tokens, concurrency slot and retry are taken once,
 * before the pipeline sees it, and settled to what the attempt used when it ends (0 for one
 * that never ran). A refusal here is recorded through the pipeline like its own, so every
 * request has a decision record whoever turned it away.
 */
import { turnHasCome } from '../core/queueing/kept-turns.ts';
import { TenantLedger, beyondWindow } from '../core/admission/budget/tenant-ledger.ts';
import type { ResolvedPolicy } from '../core/config/policy.ts';
import { lookupTenant } from '../core/config/tenant-schema.ts';
import type { Pipeline } from '../core/pipeline.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { Rejection } from '../core/request/decision.ts';
import type { LlmRequest } from '../core/request/request.ts';
import type { Ms } from '../core/request/units.ts';
import type { RequestTracker } from './request-tracker.ts';

export class TenantDoor {
  private readonly ledger = new TenantLedger();
  private readonly tenants: ResolvedPolicy['tenants'];
  private readonly pipeline: Pipeline<RequestTracker>;
  private readonly clock: Clock;

  constructor(
    tenants: ResolvedPolicy['tenants'],
    pipeline: Pipeline<RequestTracker>,
    clock: Clock,
  ) {
    this.tenants = tenants;
    this.pipeline = pipeline;
    this.clock = clock;
  }

  /** Takes `asked`'s share of its tenant's quotas for `t`; the refusal if they are spent. */
  admit(
    t: RequestTracker,
    asked: LlmRequest,
    now: Ms,
  ): { outcome: 'reject'; decision: Rejection } | undefined {
    // A request not allowed at all (an unknown tenant, a prompt no context holds) asks no quota.
    const at = this.pipeline.door(asked);
    if (at.refusal !== undefined) {
      return { outcome: 'reject', decision: this.pipeline.refuse(asked, at.refusal, now) };
    }
    const tenant = lookupTenant(this.tenants, asked.tenant);
    // Under a policy without the contract gate, an unknown tenant holds nothing here.
    if (tenant === undefined) return undefined;
    const tokens = at.charge;
    const never = beyondWindow(tokens, tenant.quotas);
    if (never !== undefined) {
      return { outcome: 'reject', decision: this.pipeline.refuse(asked, never, now) };
    }
    const verdict = this.ledger.admit(
      {
        tenant: tenant.name,
        requestId: asked.id,
        tokens,
        // A retry that comes for its kept turn was invited: the retry budget does not charge it.
        attempt: turnHasCome(this.pipeline.learned.turns, asked.idempotencyKey, now)
          ? 1
          : (asked.attempt ?? 1),
        quotas: tenant.quotas,
        retryBudgetRatio: tenant.retryBudgetRatio,
      },
      now,
    );
    if (verdict.ok) {
      t.lease = verdict.lease;
      return undefined;
    }
    const decision: Rejection = {
      outcome: 'reject',
      status: 429,
      reason: verdict.reason,
      retryAfterMs: verdict.retryAfterMs,
    };
    return { outcome: 'reject', decision: this.pipeline.refuse(asked, decision, now) };
  }

  /** `t`'s attempt ended having used `usedTokens`: what it took is given back. */
  settle(t: RequestTracker, usedTokens: number): void {
    if (t.lease !== null) this.ledger.release(t.lease, usedTokens, this.clock.now());
    t.lease = null;
  }
}
