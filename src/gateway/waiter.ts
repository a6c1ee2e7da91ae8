/**
 * The gateway's side of one request the pipeline holds: a promise that settles when its wait ends
 * — dispatched, expired in the queue, or stopped (its client gone, a deadline, a shutdown) — and
 * how a trace names the decision and the end of the wait.
 */
import type { RejectReason } from '../core/request/decision.ts';
import type { Ticket } from '../core/queueing/ticket.ts';
import type { StopCause } from './stop.ts';

export type Settled =
  | { readonly how: 'dispatched' }
  | { readonly how: 'expired'; readonly reason: RejectReason }
  | { readonly how: 'stopped'; readonly why: StopCause };

/** The gateway's side of one waiting or dispatched request. */
export class Waiter {
  resolve: (how: Settled) => void = () => {};
  readonly settled = new Promise<Settled>((r) => (this.resolve = r));
}

/** The decision an offer that was not refused made, as a trace names it. */
export function resultOf(offer: { outcome: 'queued' | 'deferred'; ticket: Ticket<Waiter> }) {
  if (offer.outcome === 'deferred') return 'defer';
  const d = offer.ticket.decision;
  return d.outcome === 'admit' && d.degradation !== undefined ? 'degrade' : 'admit';
}

/** Why a wait did not end in a dispatch; undefined when it did. */
export function whyNot(settled: Settled): string | undefined {
  switch (settled.how) {
    case 'dispatched':
      return undefined;
    case 'expired':
      return settled.reason;
    case 'stopped':
      return settled.why;
  }
}
