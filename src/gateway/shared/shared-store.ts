/**
 * The state several gateway replicas must share, behind one interface: per-tenant quotas (token
 * and request buckets, concurrency leases), the per-tenant retry budget, and idempotency claims
 * bound to their request's fingerprint, with the stored answer for replay, and the Responses
 * API's kept responses. In memory for one process, Redis for many; the failover store picks
 * between them. Rules every implementation keeps (the conformance suites in
 * store-conformance.ts and response-conformance.ts check them):
 * - `admit` is all or nothing and atomic: a refusal takes nothing, a grant takes the tokens, one
 *   request from the request bucket, one concurrency slot when the tenant has a limit, and one
 *   retry when the attempt is a retry; every refusal carries a Retry-After in [1 ms, the window]
 *   (60 s for the retry budget), the longer wait when both buckets refuse. A tenant with a token
 *   or request limit is told where each bucket stands: after a grant's charge, or as it was
 *   when refused.
 * - `release(used)` moves the tenant's token bucket by (used − estimate) once, never above its
 *   limit, and gives the request back when it used nothing (it never ran).
 * - `claim` is atomic: of two concurrent claims on one key exactly one gets `claimed`.
 * - A key is bound to the fingerprint of the request that claimed it, in flight and once done
 *   (as Stripe and the IETF Idempotency-Key draft bind it): a claim with another fingerprint
 *   gets `mismatch`, ahead of `in_flight` or `done`, since the client is reusing the key for
 *   another request and must learn so rather than wait or get another request's answer. The
 *   same fingerprint gets `in_flight` or `done`; an abandoned key is free for any fingerprint.
 * - A kept response is its tenant's alone: another tenant's load or delete of its id finds none.
 *   One larger than `RESPONSE_MAX_BYTES` is not kept (`saveResponse` says false). So is its
 *   stream's log of events, which goes with it when it is deleted.
 * - `takeTurn` is atomic: of two concurrent takes of a due turn exactly one gets it.
 * - A method rejects only when the store cannot be reached; a handle's methods (`release`,
 *   `complete`, `abandon`) never reject and are idempotent, so `finally` blocks can call them.
 */
import type {
  Standings,
  TenantAsk,
  TenantReason,
} from '../../core/admission/budget/tenant-ledger.ts';
import type { TurnStanding } from '../../core/queueing/kept-turns.ts';
import type { Ms } from '../../core/request/units.ts';
import { errorBody } from '../../openai/errors.ts';

/** What a request asks of its tenant's quotas: the tenant-accounting port's ask (core). */
export type { TenantAsk };
export type SharedReason = TenantReason;

/**
 * Held while the request runs; `release` frees its concurrency slot and, given the tokens the
 * request actually used (prompt + completion; 0 when it never ran), settles the tenant's token
 * bucket to them: the charge taken at admission is given back or drawn further. Without a
 * count the charge stands.
 */
export interface Lease {
  release(usedTokens?: number): Promise<void>;
}

/** A verdict, with where the tenant's windowed quotas stand (its grant's, or its refusal's). */
export type QuotaVerdict = Standings &
  (
    | { readonly ok: true; readonly lease: Lease }
    | { readonly ok: false; readonly reason: SharedReason; readonly retryAfterMs: Ms }
  );

/** A completed non-streaming answer, replayed as it was for a repeated Idempotency-Key. */
export interface StoredResponse {
  readonly status: number;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** The claim on one idempotency key, held while its request runs. */
export interface ClaimHold {
  /** Keeps `response` for replay (for the store's replay TTL) and ends the claim. */
  complete(response: StoredResponse): Promise<void>;
  /** Ends the claim without an answer: the next attempt with the key runs. */
  abandon(): Promise<void>;
}

export type Claim =
  | { readonly kind: 'claimed'; readonly hold: ClaimHold }
  | { readonly kind: 'in_flight' }
  | { readonly kind: 'done'; readonly response: StoredResponse }
  /** The key is held or done for a request with another fingerprint. */
  | { readonly kind: 'mismatch' };

/** Events added to a stream's log, `from` the index of the first (`SharedStore.watchEvents`). */
export type Told = (from: number, events: readonly string[]) => void;

/** A kept turn's end, as the replica that ended it tells the others (`SharedStore.watchTurns`). */
export interface TurnEnd {
  /** The replica that ended it, which has settled its own count. */
  readonly by: string;
  /** `claimed`: its client came back; `dropped`: its retry was refused for good. */
  readonly outcome: 'claimed' | 'dropped';
  readonly tenant: string;
  readonly key: string;
}

export interface SharedStore {
  /** Takes a request's share of its tenant's quotas and retry budget, or says why not. */
  admit(ask: TenantAsk): Promise<QuotaVerdict>;
  /**
   * Claims `key` of `tenant` (keys are per tenant) for the request `fingerprint` names (an
   * opaque string: the caller's hash of the request, body and mode), or reports the key in
   * flight or done for that request, or held for another (`mismatch`).
   */
  claim(tenant: string, key: string, fingerprint: string): Promise<Claim>;
  /**
   * Keeps a Responses API response under its id (`resp_…`) for the store's response TTL: the
   * JSON text of what its conversation's next turn needs (http/kept-records.ts). False when
   * it is too large to keep.
   */
  saveResponse(tenant: string, id: string, text: string): Promise<boolean>;
  /** The text kept under `id` for `tenant`; undefined when none is (never kept, expired, deleted). */
  loadResponse(tenant: string, id: string): Promise<string | undefined>;
  /**
   * The beginning of that text: at least its first `chars` characters, whole (all of it when
   * shorter; what follows them may end in a character cut). A record's head, read without the
   * conversation after it.
   */
  loadResponsePrefix(tenant: string, id: string, chars: number): Promise<string | undefined>;
  /** Forgets the response kept under `id`, and its stream's events; false when none was. */
  deleteResponse(tenant: string, id: string): Promise<boolean>;
  /**
   * Adds to the log of a background response's stream (http/response-stream.ts): each of
   * `events` one SSE event's text, its index in the log its `sequence_number`. The log is kept
   * as long as a kept response, counted from its last addition.
   */
  appendEvents(tenant: string, id: string, events: readonly string[]): Promise<void>;
  /**
   * Up to `max` events of `id`'s log from index `from` (negative: counted from its end, -1 its
   * last, as Redis's LRANGE counts); none when it has no more (or no log).
   */
  readEvents(tenant: string, id: string, from: number, max: number): Promise<readonly string[]>;
  /**
   * Tells `told` the events added to `id`'s log, and the index of the first, from when it
   * resolves until the function it resolves with is called. Word may be lost (a reconnect): a
   * watcher reads the log now and then all the same. Rejects when the store cannot watch now.
   */
  watchEvents(tenant: string, id: string, told: Told): Promise<() => void>;
  /**
   * Says gateway replica `replica` is alive for the next `ttlMs` (http/kept-records.ts
   * `loadSettled`), and whether it is `serving`: not draining, so it takes background responses
   * other replicas hand over (http/background-handover.ts).
   */
  beat(replica: string, ttlMs: number, serving: boolean): Promise<void>;
  /** Whether `replica`'s last `beat` is still in force. */
  alive(replica: string): Promise<boolean>;
  /** The replicas whose last beat, still in force, said they were serving. */
  serving(): Promise<readonly string[]>;
  /**
   * Posts replica `replica`'s last autoscaling tick (opaque text: ../peer-windows.ts) for
   * `ttlMs`, so every replica's autoscaler decides on the demand they all see.
   */
  postWindow(replica: string, text: string, ttlMs: number): Promise<void>;
  /** The ticks posted and still in force, by replica. */
  windows(): Promise<ReadonlyMap<string, string>>;
  /**
   * Offers `order` (a background response to run, as text) to the replicas serving; it waits
   * for one for the store's response TTL.
   */
  handOver(order: string): Promise<void>;
  /** Up to `max` of the orders handed over, oldest first, each to one caller alone. */
  takeHandedOver(max: number): Promise<readonly string[]>;
  /**
   * Keeps the order of a background response still queued under its id, for the store's
   * response TTL: should its replica go, the replica that finds it gone hands it over.
   */
  keepOrder(tenant: string, id: string, order: string): Promise<void>;
  /** Takes the order kept under `id`, one caller alone; undefined when none is. */
  takeOrder(tenant: string, id: string): Promise<string | undefined>;
  /** Forgets the order kept under `id`: its response left the queue. */
  dropOrder(tenant: string, id: string): Promise<void>;
  /**
   * Whether the caller alone is to settle the record of `id`, its runner gone (http/kept-records.ts
   * `loadSettled`): true for one caller in `ttlMs`, false for the others meanwhile.
   */
  settling(tenant: string, id: string, ttlMs: number): Promise<boolean>;
  /**
   * Keeps the turn (core/queueing/kept-turns.ts) of `tenant`'s request with Idempotency-Key
   * `key` for its retry on any replica: due `inMs` from now, held `graceMs` after that. It
   * replaces any turn the key held.
   */
  keepTurn(tenant: string, key: string, inMs: Ms, graceMs: Ms): Promise<void>;
  /**
   * Where the retry with `key` stands at the turn kept for it: none (undefined); due, from
   * `earlyMs` before — then taken, by one caller alone, and its end told to the watchers as
   * claimed `by` it; or due in `inMs`.
   */
  takeTurn(tenant: string, key: string, earlyMs: Ms, by: string): Promise<TurnStanding | undefined>;
  /** Ends the turn of `key`, told to the watchers as `outcome` `by` it; none kept: nothing. */
  endTurn(tenant: string, key: string, outcome: TurnEnd['outcome'], by: string): Promise<void>;
  /** Tells `told` each turn ended, on any replica, until the function it resolves with is called. */
  watchTurns(told: (end: TurnEnd) => void): Promise<() => void>;
  /** Resolves when the store answers and takes writes; rejects when it cannot be reached. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Responses larger than this are not kept for replay, so one answer cannot fill the store. */
export const REPLAY_MAX_BYTES = 1024 * 1024;

/**
 * What is kept for replay of `response`: itself, or — too large to keep — a 409 saying the
 * request ran and its answer is not kept. Never nothing: a key whose request ran is never free
 * for it to run again (a stream of 6,000 tokens, 1.4 MB of SSE, had run twice).
 */
export function replayed(response: StoredResponse): StoredResponse {
  if (response.body.length <= REPLAY_MAX_BYTES) return response;
  const message =
    `Idempotency-Key: the request with this key ran, and its answer (${response.body.length} ` +
    `bytes, over the ${REPLAY_MAX_BYTES} kept for replay) is not kept: send another key to ask again`;
  return {
    status: 409,
    body: JSON.stringify(errorBody(409, message, null, 'idempotency_answer_not_kept')),
    headers: { 'content-type': 'application/json' },
  };
}

/**
 * The largest kept response: a conversation at a 128K-token context is about 1 MiB of JSON, and
 * a request body may be 16 MiB.
 */
export const RESPONSE_MAX_BYTES = 16 * 1024 * 1024;

/** How long a kept response is kept, unless the gateway is told otherwise: a working day. */
export const RESPONSE_TTL_MS = 24 * 3_600_000;

/** A lease or claim hold with nothing to undo. */
export const NO_LEASE: Lease = { release: async () => {} };

/**
 * The failover store's refusal when the shared state is unreachable and the policy is
 * `closed`: the gateway answers 503 `service_capacity` with this Retry-After.
 */
export class SharedStoreUnavailable extends Error {
  readonly retryAfterMs: Ms;

  constructor(retryAfterMs: Ms) {
    super('the shared state store is unreachable');
    this.name = 'SharedStoreUnavailable';
    this.retryAfterMs = retryAfterMs;
  }
}

export function isSharedStoreUnavailable(e: unknown): e is SharedStoreUnavailable {
  return e instanceof SharedStoreUnavailable;
}
