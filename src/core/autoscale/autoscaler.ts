/**
 * The autoscaling extension point. Each tick the host measures the fleet (`ScaleSignals`) and
 * asks the autoscaler how many replica groups it wants; the host then starts groups (ready only
 * after their ready time) or drains them. Rules: `decide` is deterministic given its state and
 * the signals; state is plain data made by `initState`; the answer is within the limits, and it
 * says why (a closed reason, for the timeline and the metrics).
 */
import type { Ms } from '../request/units.ts';
import type { GroupCapacity } from './scale-window.ts';

export interface ScaleSignals {
  readonly nowMs: Ms;
  /** Groups serving, starting (requested, not ready yet), and draining. */
  readonly ready: number;
  readonly starting: number;
  readonly draining: number;
  /** Requests offered per second over the last tick. */
  readonly arrivalRps: number;
  /** Requests that completed within their SLO per second over the last tick. */
  readonly goodRps: number;
  /** Requests that missed their SLO — refused, expired or late — per second, over the last tick. */
  readonly missedRps: number;
  /** Requests waiting: at the control plane, and in the engines' own queues. */
  readonly queued: number;
  readonly engineWaiting: number;
  /** Requests running in the engines. */
  readonly running: number;
  /** Mean KV usage and busy fraction (GPU utilisation) of the ready groups over the last tick, 0–1. */
  readonly kvUsage: number;
  readonly utilization: number;
  /** Whether the figures are fresh: no scale-in on stale or missing metrics. */
  readonly fresh: boolean;
  /**
   * One group's capacity at SLO for the recent mix, as the step-time model predicts it: the
   * rate it serves and the streams it holds. Undefined before a request has completed.
   */
  readonly model?: GroupCapacity;
}

export interface ScaleLimits {
  readonly minReplicas: number;
  readonly maxReplicas: number;
  /** The expected time from a group's request to its readiness (its look-ahead). */
  readonly readyTimeMs: Ms;
  /** How often `decide` is called. */
  readonly tickMs: Ms;
  /** Scale-in goes no lower than the highest recommendation over this window (default 5 min). */
  readonly scaleInWindowMs: Ms;
  /**
   * The multiple of the forecast arrival rate the groups are sized to serve: a burst up to it
   * is served by the groups already ready while new ones start.
   */
  readonly headroom: number;
}

export const SCALE_REASONS = [
  'hold',
  'arrivals',
  'queue',
  'floor',
  'ceiling',
  'utilization',
  'waiting',
  'concurrency',
  'panic',
  'scale_in',
  'n_minus_1',
  'stabilizing',
  'stale',
  'frozen',
] as const;
export type ScaleReason = (typeof SCALE_REASONS)[number];

export interface ScaleDecision {
  /** Groups wanted: ready plus starting, after the drain of any beyond it. */
  readonly desired: number;
  readonly reason: ScaleReason;
}

export interface Autoscaler<S = unknown> {
  readonly type: string;
  /** One line: what it models. */
  readonly description: string;
  /** It plans with a group's capacity and a burst headroom (`--burst-headroom`, `--capacity-envelope`). */
  readonly readsCapacity?: boolean;
  initState(): S;
  decide(state: S, signals: ScaleSignals, limits: ScaleLimits): ScaleDecision;
}

export function clampDesired(n: number, limits: ScaleLimits): number {
  return Math.max(limits.minReplicas, Math.min(limits.maxReplicas, Math.ceil(n)));
}
