/**
 * A request's passage through the shared state, before the pipeline sees it: claim its
 * Idempotency-Key (a completed answer is replayed, one in flight anywhere is a 409 `duplicate`),
 * then take its share of the tenant's quotas and retry budget (a refusal is a 429 with
 * Retry-After). What it takes is given back by `Pass.end`, which the handler calls when the
 * request ends — however it ends — and awaits before the client sees the end, so a client's
 * next request (on any replica) finds the slot free and the answer stored; `end` is idempotent
 * and never rejects. When the store is unreachable and
 * fails closed, a request that needs shared state (a quota, a key, a retry) gets a 503
 * `service_capacity`; one that does not goes on without it.
 */
import type { TenantPolicy } from '../../core/request/tenant.ts';
import type { GatewayMetrics } from '../gateway-metrics.ts';
import { refusal } from '../http/refusals.ts';
import {
  isSharedStoreUnavailable,
  type ClaimHold,
  type Lease,
  type SharedReason,
  type SharedStore,
  type StoredResponse,
} from './shared-store.ts';

export interface DoorAsk {
  readonly tenant: TenantPolicy;
  readonly requestId: string;
  /** Prompt estimate + the output cap. */
  readonly tokens: number;
  readonly attempt: number;
  readonly idempotencyKey?: string;
}

export interface Pass {
  /**
   * The request is over: frees its slot, settles its token charge to `usedTokens` (prompt +
   * completion, when the upstream reported them), and keeps `answer` for replay under its key.
   */
  end(answer?: StoredResponse, usedTokens?: number): Promise<void>;
}

export type Door =
  | { readonly kind: 'answered'; readonly response: Response }
  | { readonly kind: 'enter'; readonly pass: Pass };

/** No shared state held: for requests the store had nothing to say about. */
export const OPEN_DOOR: Door = { kind: 'enter', pass: { end: async () => {} } };

export async function atTheDoor(
  store: SharedStore,
  metrics: GatewayMetrics,
  ask: DoorAsk,
): Promise<Door> {
  const q = ask.tenant.quotas;
  const refused = (
    res: Response,
    reason: SharedReason | 'duplicate' | 'service_capacity',
  ): Door => {
    metrics.sharedRefusals.inc({ reason });
    res.headers.set('x-goodput-request-id', ask.requestId);
    return { kind: 'answered', response: res };
  };
  let hold: ClaimHold | undefined;
  try {
    if (ask.idempotencyKey !== undefined) {
      const claim = await store.claim(ask.tenant.name, ask.idempotencyKey);
      if (claim.kind === 'done') return { kind: 'answered', response: replayed(claim.response) };
      if (claim.kind === 'in_flight') {
        metrics.duplicates.inc();
        return refused(refusal('duplicate', 409), 'duplicate');
      }
      hold = claim.hold;
    }
    const verdict = await store.admit({
      tenant: ask.tenant.name,
      requestId: ask.requestId,
      tokens: ask.tokens,
      attempt: ask.attempt,
      quotas: q,
      retryBudgetRatio: ask.tenant.retryBudgetRatio,
    });
    if (!verdict.ok) {
      await hold?.abandon();
      return refused(refusal(verdict.reason, 429, verdict.retryAfterMs), verdict.reason);
    }
    return { kind: 'enter', pass: pass(verdict.lease, hold) };
  } catch (e) {
    await hold?.abandon();
    if (!isSharedStoreUnavailable(e)) throw e;
    const needed =
      ask.idempotencyKey !== undefined ||
      ask.attempt > 1 ||
      q.tokensPerWindow !== undefined ||
      q.maxConcurrentRequests !== undefined;
    if (!needed) return OPEN_DOOR;
    return refused(refusal('service_capacity', 503, e.retryAfterMs), 'service_capacity');
  }
}

function pass(lease: Lease, hold: ClaimHold | undefined): Pass {
  let ended: Promise<void> | undefined;
  const settle = async (answer: StoredResponse | undefined, usedTokens: number | undefined) => {
    await Promise.all([
      lease.release(usedTokens),
      answer === undefined ? hold?.abandon() : hold?.complete(answer),
    ]);
  };
  return {
    end(answer, usedTokens) {
      ended ??= settle(answer, usedTokens);
      return ended;
    },
  };
}

function replayed(r: StoredResponse): Response {
  return new Response(r.body, {
    status: r.status,
    headers: { ...r.headers, 'x-goodput-replayed': 'true' },
  });
}
