/**
 * A request's passage through the shared state, before the pipeline sees it: claim its
 * Idempotency-Key (a completed answer to the same request is replayed, one in flight anywhere is
 * a 409 `duplicate`, a key used for a different request is a 422 `idempotency_key_reused`), then
 * take its share of the tenant's quotas and retry budget (a refusal is a 429 with Retry-After;
 * one asking more tokens than the whole window allows is a final 429, without, telling where the
 * tenant's buckets stand all the same).
 * The door only decides: the caller counts and records a refusal like any other. What a request
 * takes is given back by `Pass.end`, which the handler calls when the request ends — however it
 * ends — and awaits before the client sees the end, so a client's next request (on any replica)
 * finds the slot free and the answer stored; `end` is idempotent and never rejects. When the
 * store is unreachable and fails closed, a request that needs shared state (a quota, a key, a
 * retry) gets a 503 `service_capacity`; one that does not goes on without it.
 */
import { beyondWindow, type Standings } from '../../core/admission/budget/tenant-ledger.ts';
import type { Rejection } from '../../core/request/decision.ts';
import type { TenantPolicy } from '../../core/request/tenant.ts';
import {
  isSharedStoreUnavailable,
  type ClaimHold,
  type Lease,
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
  /** The request's fingerprint (body and mode): binds its Idempotency-Key to it. */
  readonly fingerprint?: string;
}

export interface Pass {
  /**
   * The request is over: frees its slot, settles its token charge to `usedTokens` (prompt +
   * completion, when the upstream reported them), and keeps `answer` for replay under its key.
   */
  end(answer?: StoredResponse, usedTokens?: number): Promise<void>;
  /**
   * Keeps `answer` for replay under its key now, while the request goes on holding its slot (a
   * background response, answered before it runs); its `end` then keeps nothing more.
   */
  answered(answer: StoredResponse): Promise<void>;
}

/** `standing`: where the tenant's windowed quotas stand, when it has any (its answer tells it). */
export type Door =
  | { readonly kind: 'replay'; readonly answer: StoredResponse; readonly standing?: undefined }
  | {
      readonly kind: 'refused';
      readonly rejection: Rejection;
      readonly standing?: Standings;
      /** Why, in words, where the reason alone would mislead (the store unreachable). */
      readonly message?: string;
    }
  | { readonly kind: 'enter'; readonly pass: Pass; readonly standing?: Standings };

/** No shared state held: for requests the store had nothing to say about. */
export const OPEN_DOOR: Door = {
  kind: 'enter',
  pass: { end: async () => {}, answered: async () => {} },
};

export async function atTheDoor(store: SharedStore, ask: DoorAsk): Promise<Door> {
  const q = ask.tenant.quotas;
  let hold: ClaimHold | undefined;
  try {
    if (ask.idempotencyKey !== undefined) {
      const claim = await store.claim(ask.tenant.name, ask.idempotencyKey, ask.fingerprint ?? '');
      if (claim.kind === 'mismatch') return refused(422, 'idempotency_key_reused');
      if (claim.kind === 'done') return { kind: 'replay', answer: claim.response };
      if (claim.kind === 'in_flight') return refused(409, 'duplicate');
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
    const standing = standingOf(verdict);
    // A charge more than the whole window holds is refused for good, whatever else the store
    // said (it grants no such charge, and a refusal takes nothing); its answer still tells where
    // the buckets stand, as every answer to a tenant with a windowed quota does.
    const never = beyondWindow(ask.tokens, q);
    if (never !== undefined) {
      if (verdict.ok) await verdict.lease.release(0);
      await hold?.abandon();
      return standing === undefined
        ? { kind: 'refused', rejection: never }
        : { kind: 'refused', rejection: never, standing };
    }
    if (!verdict.ok) {
      await hold?.abandon();
      return refused(429, verdict.reason, verdict.retryAfterMs, standing);
    }
    const entered = { kind: 'enter', pass: pass(verdict.lease, hold) } as const;
    return standing === undefined ? entered : { ...entered, standing };
  } catch (e) {
    await hold?.abandon();
    if (!isSharedStoreUnavailable(e)) throw e;
    const needed =
      ask.idempotencyKey !== undefined ||
      ask.attempt > 1 ||
      q.tokensPerWindow !== undefined ||
      q.requestsPerWindow !== undefined ||
      q.maxConcurrentRequests !== undefined;
    if (!needed) return OPEN_DOOR;
    return { ...refused(503, 'service_capacity', e.retryAfterMs), message: UNREACHABLE };
  }
}

const UNREACHABLE =
  "the gateways' shared state (Redis) is unreachable: a request that needs a tenant quota, an " +
  'Idempotency-Key or a retry is refused until it answers';

function refused(
  status: Rejection['status'],
  reason: Rejection['reason'],
  retryAfterMs?: number,
  standing?: Standings,
): Extract<Door, { kind: 'refused' }> {
  const rejection = { outcome: 'reject', status, reason, retryAfterMs } as const;
  return standing === undefined
    ? { kind: 'refused', rejection }
    : { kind: 'refused', rejection, standing };
}

/** The standings a verdict tells, when the tenant has a windowed quota. */
function standingOf({ tokens, requests }: Standings): Standings | undefined {
  if (tokens === undefined) return requests === undefined ? undefined : { requests };
  return requests === undefined ? { tokens } : { tokens, requests };
}

function pass(lease: Lease, claim: ClaimHold | undefined): Pass {
  let ended: Promise<void> | undefined;
  // The key's claim, until an answer is kept under it.
  let hold = claim;
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
    async answered(answer) {
      const held = hold;
      hold = undefined;
      await held?.complete(answer);
    },
  };
}
