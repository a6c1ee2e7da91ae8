/**
 * A tenant's own limits that need the pipeline's estimates, enforced at admission: concurrent
 * sessions, a GPU-time bucket and agent-tree budgets. Tokens per window, concurrent requests and
 * the retry budget are the tenant ledger's (tenant-ledger.ts), taken once at the door by the
 * gateway and the simulator alike — and shared across gateways in Redis; these are per
 * pipeline. Main rule: `check` reads and never writes; `commit` charges the median estimate and
 * `settle` corrects it to the actual exactly once per request, so a tenant that used more than
 * predicted carries debt and one that used less gets it back. Every refusal is a 429 with a
 * finite Retry-After in [1, window]:
 * - sessions: `BUSY_RETRY_MS` (within the window), since they free up when another request
 *   ends, which nothing here can predict;
 * - GPU time: when the bucket will hold the charge, capped at the window (a charge larger than
 *   the whole window's allowance gets exactly the window);
 * - root budget: the window — a tree never gets budget back, so this only paces retries.
 */
import { PASS, type GateInput, type GateVerdict } from '../gate.ts';
import type { RejectReason } from '../../request/decision.ts';
import type { LlmRequest } from '../../request/request.ts';
import type { Ms, Tokens } from '../../request/units.ts';
import { estimatedGpuMs, estimatedTokens } from './demand-cost.ts';
import { breachOf, join, leave, prune, seatOf } from './root-trees.ts';
import {
  newTenantState,
  snapshotOf,
  type TenantSnapshot,
  type TenantState,
} from './tenant-state.ts';
import { quotaCharge, quotaCorrect, quotaWaitMs } from './quota-bucket.ts';
import { boundedRetryMs } from './token-bucket.ts';
import { BUSY_RETRY_MS } from './tenant-ledger.ts';

export class TenantBudgets {
  readonly #tenants = new Map<string, TenantState>();

  check(input: GateInput): GateVerdict {
    const { req, demand, tenant, nowMs } = input;
    if (tenant === undefined) return PASS; // the contract gate turns unknown tenants away
    const q = tenant.quotas;
    const s = this.#tenants.get(req.tenant);
    const sessions = s?.sessions;
    const newSession = req.session !== undefined && sessions?.has(req.session) !== true;
    if (q.maxConcurrentSessions !== undefined && newSession) {
      if ((sessions?.size ?? 0) >= q.maxConcurrentSessions) {
        return reject('tenant_sessions', boundedRetryMs(BUSY_RETRY_MS, q.windowMs));
      }
    }
    const tokens = estimatedTokens(demand);
    const gpuMs = estimatedGpuMs(demand);
    const gpuWait = quotaWaitMs(s?.gpu ?? null, gpuMs, q.gpuMsPerWindow, q.windowMs, nowMs);
    if (gpuWait > 0) return reject('tenant_gpu_time', boundedRetryMs(gpuWait, q.windowMs));
    const budget = tenant.rootBudget;
    if (budget !== undefined && s !== undefined) {
      const seat = seatOf(req, s.trees, budget, q.windowMs, nowMs);
      if (seat?.child === true && seat.tree !== undefined) {
        if (breachOf(seat.tree, budget, tokens, nowMs) !== undefined) {
          return reject('root_budget', Math.max(1, q.windowMs));
        }
      }
    }
    return PASS;
  }

  /** `input` was admitted: charge its estimates. Committing the same request id twice is a no-op. */
  commit(input: GateInput): void {
    const { req, demand, tenant, nowMs } = input;
    if (tenant === undefined) return;
    const q = tenant.quotas;
    let s = this.#tenants.get(req.tenant);
    if (s === undefined) {
      s = newTenantState(q, nowMs);
      this.#tenants.set(req.tenant, s);
    }
    if (s.commitments.has(req.id)) return;
    s.quotas = q;
    const tokens = estimatedTokens(demand);
    const gpuMs = estimatedGpuMs(demand);
    if (q.gpuMsPerWindow !== undefined) {
      s.gpu = quotaCharge(s.gpu, gpuMs, q.gpuMsPerWindow, q.windowMs, nowMs);
    }
    if (req.session !== undefined) {
      s.sessions.set(req.session, (s.sessions.get(req.session) ?? 0) + 1);
    }
    const treeKey = joinTree(s, input, tokens);
    s.commitments.set(req.id, {
      session: req.session ?? null,
      inputTokens: req.inputTokens,
      tokens,
      gpuMsTaken: q.gpuMsPerWindow === undefined ? null : gpuMs,
      treeKey,
    });
  }

  /**
   * `req` ended after generating `outputTokens` and using `actualGpuMs`: release its slot and
   * session, and replace its estimates by actuals (prompt as served + output). Settling a
   * request that is not in flight — unknown, or already settled — changes nothing.
   */
  settle(req: LlmRequest, outputTokens: Tokens, actualGpuMs: Ms, nowMs: Ms): void {
    const s = this.#tenants.get(req.tenant);
    const c = s?.commitments.get(req.id);
    if (s === undefined || c === undefined) return;
    s.commitments.delete(req.id);
    if (c.session !== null) {
      const left = (s.sessions.get(c.session) ?? 0) - 1;
      if (left > 0) s.sessions.set(c.session, left);
      else s.sessions.delete(c.session);
    }
    const q = s.quotas;
    const actualTokens = c.inputTokens + outputTokens;
    if (c.gpuMsTaken !== null && s.gpu !== null && q.gpuMsPerWindow !== undefined) {
      s.gpu = quotaCorrect(s.gpu, actualGpuMs - c.gpuMsTaken, q.gpuMsPerWindow, q.windowMs, nowMs);
    }
    const tree = c.treeKey === null ? undefined : s.trees.get(c.treeKey);
    if (tree !== undefined) leave(tree, c.tokens, actualTokens, nowMs);
  }

  /** A deep, JSON-serialisable copy of every tenant's state. */
  snapshot(): Record<string, TenantSnapshot> {
    return Object.fromEntries([...this.#tenants].map(([name, s]) => [name, snapshotOf(s)]));
  }
}

function reject(reason: RejectReason, retryAfterMs: Ms): GateVerdict {
  return { pass: false, reason, status: 429, retryAfterMs };
}

/** Counts an admitted request in its agent tree, sweeping stale trees at most once a window. */
function joinTree(s: TenantState, input: GateInput, tokens: Tokens): string | null {
  const { req, tenant, nowMs } = input;
  const budget = tenant?.rootBudget;
  if (tenant === undefined || budget === undefined) return null;
  const windowMs = tenant.quotas.windowMs;
  if (nowMs >= s.nextPruneMs) {
    prune(s.trees, budget, windowMs, nowMs);
    s.nextPruneMs = nowMs + windowMs;
  }
  const seat = seatOf(req, s.trees, budget, windowMs, nowMs);
  if (seat === undefined) return null;
  join(s.trees, seat, req, tokens, nowMs);
  return seat.key;
}
