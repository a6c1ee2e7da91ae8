/**
 * What the estimator may read of the queues, and nothing it could change: how many wait ahead
 * of a new request, since when the oldest has waited, a tenant's own pace in a fair band,
 * whether lower work waits, and how fast work has been leaving (`WaitingBands` answers it).
 * The wait model (../estimate/fleet-summary.ts) depends on this view, not on the dispatcher.
 */
import type { Ms, Tokens } from '../request/units.ts';
import type { DispatchRate } from './dispatch-rate.ts';

/** A dispatch rate, read-only. */
export type RateView = Pick<DispatchRate, 'perMs' | 'lastPerMs'>;

export interface QueueView {
  /** Requests a new one in the band of `priority` would wait behind (`WaitingBands.ahead`). */
  ahead(priority: number, long: boolean, tenant?: string): number;
  /** The mean prompt (tokens to prefill) of the long prompts waiting there; 0 when none. */
  longMeanTokens(priority: number): Tokens;
  /** When the longest-waiting request served before or with `priority` was offered. */
  oldestOfferedMs(priority: number, tenant?: string): Ms;
  /** A tenant's own pace in a fair band, when it has work queued there. */
  tenantPaceMs(priority: number, tenant: string): Ms | undefined;
  /** Whether work of lower priority than `priority` waits, in a band or deferred. */
  lowerWaiting(priority: number): boolean;
  /**
   * Whether, in the band of `priority`, a new request of `other` goes before a new one of
   * `tenant`: in a fair band only when `other` has had no more weighted service; else always.
   */
  before(priority: number, other: string, tenant: string): boolean;
  /** Dispatches per ms while work was left waiting. */
  readonly rate: RateView;
}
