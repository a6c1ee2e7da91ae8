/**
 * How admitted work reaches the replicas — two strategies, chosen by the policy's
 * `dispatch.type`, registered here once:
 *
 * - `immediate` (the baselines): each request goes to the router's pick the moment it is
 *   admitted, head of the queue first; the engine's own queue absorbs what the replica cannot
 *   take yet. Bands keep strict priority (no contract passes: nothing waits to be reordered).
 * - `flow-control`: a request leaves only for a replica flow control says can take it now
 *   (`../routing/flow-control.ts`); one that fits nowhere is passed by up to `lookahead`
 *   younger ones, a long prompt gets a replica held for it, and class contracts may pass a band
 *   ahead of a higher one.
 */
import type { DispatchConfig } from '../config/stage-schema.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';
import type { ReplicaAccount } from '../fleet/replica-ledger.ts';
import type { ReplicaSnapshot } from '../fleet/replica-snapshot.ts';
import type { Ms } from '../request/units.ts';
import { FILTERS } from '../routing/filters.ts';
import { FlowControl, candidateOf } from '../routing/flow-control.ts';
import type { Filter, RouteRequest } from '../routing/route.ts';

export interface DispatchStrategy {
  readonly type: DispatchConfig['type'];
  readonly flow: FlowControl;
  /** Waiting requests looked at past one that fits nowhere yet. */
  readonly lookahead: number;
  /** Whether class contracts may pass a band ahead of a higher one with work. */
  readonly contracts: boolean;
  /** Filters every placement goes through, before the router's own. */
  readonly filters: readonly Filter[];
  /**
   * Whether a prompt of `promptTokens` to compute (`seqs` choices) stalls streams beside it, as
   * the replicas of `accounts` would take it now (staged, where one takes staged pieces).
   */
  isLongPrompt(
    promptTokens: number,
    itlSloMs: Ms,
    seqs: number,
    accounts: readonly ReplicaAccount[],
  ): boolean;
  /** `r` was placed on `replica` with `hitTokens` expected cached (its account before it joins). */
  placed(
    account: ReplicaAccount,
    r: RouteRequest,
    replica: ReplicaSnapshot,
    hitTokens: number,
    nowMs: Ms,
  ): void;
}

function immediate(spec: FleetSpec): DispatchStrategy {
  return {
    type: 'immediate',
    // No margins: flow control here only answers what admission asks of a fleet (would it fit).
    flow: new FlowControl(spec, {
      itlMarginRatio: 0,
      relayGapRatio: 0,
      kvReserveRatio: 0,
      stallRisk: 0,
    }),
    lookahead: 1,
    contracts: false,
    filters: [FILTERS.servable, FILTERS.avoid],
    isLongPrompt: () => false,
    placed() {},
  };
}

function flowControl(
  spec: FleetSpec,
  config: Extract<DispatchConfig, { type: 'flow-control' }>,
  pricesStalls: boolean,
): DispatchStrategy {
  const flow = new FlowControl(spec, config);
  return {
    type: 'flow-control',
    flow,
    lookahead: config.lookahead,
    contracts: true,
    filters: [
      FILTERS.servable,
      FILTERS.avoid,
      FILTERS.held,
      ...(spec.prefilledElsewhere === true ? [FILTERS['prefill-fit']] : []),
      FILTERS[pricesStalls ? 'flow-fit-any' : 'flow-fit'],
    ],
    isLongPrompt: (promptTokens, itlSloMs, seqs, accounts) =>
      flow.isLongPrompt(promptTokens, itlSloMs, seqs, flow.stagesAnywhere(accounts)),
    placed(account, r, replica, hitTokens, nowMs) {
      // A prompt placed slow marks the stall it puts next to the replica's streams.
      const f = flow.fit(account, candidateOf(r, hitTokens), replica, nowMs);
      if (f.kind === 'slow') flow.chargeSlow(account, f, nowMs);
    },
  };
}

/** `pricesStalls`: the router weighs a slow step's stall itself (`RouterSpec.pricesStalls`). */
export function dispatchStrategy(
  config: DispatchConfig,
  spec: FleetSpec,
  pricesStalls = false,
): DispatchStrategy {
  return config.type === 'immediate' ? immediate(spec) : flowControl(spec, config, pricesStalls);
}
