/**
 * What the pipeline and its host (the simulator, the gateway) say to each other around a
 * request: the host offers it with what it knows beyond the ready replicas, and is told through
 * its sink to dispatch it, that it expired, and each decision record; and the two things a
 * host keeps to: how often it pumps the queue, and whether it reports every token.
 */
import type { Rejection, RejectReason } from './request/decision.ts';
import type { DecisionRecord } from './observe/decision-record.ts';
import type { Ticket } from './queueing/ticket.ts';
import type { TurnStanding } from './queueing/kept-turns.ts';
import type { LlmRequest } from './request/request.ts';
import type { Ms } from './request/units.ts';
import type { ResolvedPolicy } from './config/policy.ts';

export interface PipelineSink<H> {
  dispatch(ticket: Ticket<H>): void;
  /**
   * A waiting ticket reached its deadline: it failed (admitted) or expired deferred. `reason`
   * says which deadline: `deadline_exceeded` (the client's own), `deadline` (its class's first
   * token), or what a deferred ticket waited for.
   */
  expire(ticket: Ticket<H>, reason: RejectReason): void;
  /** A decision record, with the request as it was asked (what a host labels its counts by). */
  record?(record: DecisionRecord, asked: LlmRequest): void;
}

export type Offer<H> =
  | { readonly outcome: 'reject'; readonly decision: Rejection }
  | { readonly outcome: 'queued' | 'deferred'; readonly ticket: Ticket<H> };

/** What the host knows beyond the ready replicas when it offers a request. */
export interface OfferContext {
  /** A replica the request should not go to while another can take it (a failover); −1: none. */
  readonly avoid?: number;
  /** With no replica ready: when one may be again (a breaker's next probe, a replica starting). */
  readonly readyInMs?: Ms;
  /**
   * Where a retry stands at its kept turn (kept-turns.ts) as its host found it: here, or kept by
   * another host and taken if due. The pipeline's own turns, read at the offer, come first.
   */
  readonly turn?: TurnStanding;
}

/**
 * How often a host pumps the queue while anything waits, besides each arrival and end: a
 * replica's prefills finishing and its streams getting further from a stall's risk free room for
 * the queue between them. The gateway and the simulator keep the same cadence.
 */
export const PUMP_EVERY_MS: Ms = 50;

/**
 * Whether a pipeline under `policy` needs every streamed token reported (`token`): only flow
 * control uses the per-token ledger, so a host serving a baseline skips the call on its hottest
 * path. A function of the policy, so a host can decide before its pipeline exists.
 */
export function followsTokens(policy: ResolvedPolicy): boolean {
  return policy.dispatch.type !== 'immediate';
}
