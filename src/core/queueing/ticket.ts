/**
 * A request's passage through the control plane: admitted (or deferred) at the door, waiting in
 * its band, dispatched to a replica, streaming, ended. `H` is the caller's own handle (the
 * simulator's tracker, the gateway's connection), handed back untouched.
 */
import type { AdmissionDecision } from '../request/decision.ts';
import type { Demand } from '../request/demand.ts';
import type { LedgerEntry, LengthCdf } from '../fleet/replica-ledger.ts';
import type { LlmRequest } from '../request/request.ts';
import type { SloClass } from '../request/slo-classes.ts';
import type { Ms } from '../request/units.ts';
import type { Queued } from './ticket-queue.ts';
import type { TenantAccount } from './virtual-token-counter.ts';

export type TicketState = 'queued' | 'deferred' | 'dispatched' | 'ended';

export interface Ticket<H> extends Queued {
  readonly handle: H;
  /** The request as served: the asked one, or its degraded form. */
  req: LlmRequest;
  readonly asked: LlmRequest;
  readonly cls: SloClass;
  /** The policy revision in force when it was offered: its records carry it, reloads or not. */
  readonly revision: string;
  decision: AdmissionDecision;
  demand: Demand;
  state: TicketState;
  readonly offeredMs: Ms;
  /** Past this it can no longer be served usefully: dropped from the queue. */
  expiresMs: Ms;
  wasDeferred: boolean;
  /** Output lengths of its class and tenant, when known; and the most tokens it may produce. */
  lengths: LengthCdf | undefined;
  capTokens: number;
  /** Its prefill alone would stall the streams next to it: it waits for a replica that can take that. */
  long: boolean;
  /**
   * The share of a gap objective a step could take when it was admitted: the budget its promise
   * was made under, which a later cut (`../routing/gap-feedback.ts`) does not take from it. 0
   * until it is queued.
   */
  gapShare: number;
  replica: number;
  /** A replica this request should not go to (its previous attempt failed there); −1: none. */
  avoid: number;
  dispatchedMs: Ms;
  /** Prompt tokens the replica it went to was expected to hold cached, from its dispatch. */
  hitTokens: number;
  entry: LedgerEntry | null;
  /** The band it waits in: its class's priority, or ADMIN_BAND for an admin tenant's request. */
  readonly band: number;
  /** Expected charge to its tenant's virtual token counter, set when it joins a band. */
  queueCost: number;
  /** Output tokens charged to its tenant's counter so far. */
  chargedTokens: number;
  /** When its KV cache was last charged (the KV term of the cost): its dispatch, then each token. */
  kvChargedMs: Ms;
  /** Its tenant's account in the virtual token counters, from its dispatch (`ServiceCharges`). */
  account: TenantAccount | null;
}

/** The band of admin-lane requests: served before every class's. */
export const ADMIN_BAND = -1;
