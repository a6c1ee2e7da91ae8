/**
 * The outcome record: how a dispatched attempt ended, one JSON line beside its decision record
 * and found by the same `request_id` — its time to first token against the one predicted at the
 * door, its token gaps, its end, and whether it was good or which objective it missed, judged as
 * the reports judge it. Every dispatched attempt has one: a request's end, and in the gateway
 * also an attempt its backend refused (a 4xx) or one that failed and was tried again. A decision record says what was promised; this one, whether the promise
 * held, so a replay can check admission request by request. The gateway and the simulator write
 * the same keys, snake_case and stable, numbers rounded like reports.
 */
import type { Ms } from '../request/units.ts';
import type { SloClass } from '../request/slo-classes.ts';
import type { RequestOutcome, FinalState } from './request-outcome.ts';
import { firstMiss, type Miss } from './slo-judge.ts';

const r3 = (x: number) => Math.round(x * 1e3) / 1e3;
const nullable = (x: number | undefined) => (x === undefined ? null : r3(x));

export interface OutcomeRecord {
  readonly request_id: string;
  readonly tenant: string;
  readonly class: string;
  /** When it ended. */
  readonly at_ms: number;
  readonly outcome: {
    readonly state: FinalState;
    readonly output_tokens: number;
    /** From arrival; null when no token came. */
    readonly ttft_ms: number | null;
    /** What admission predicted at the door, for the attempt that was served; null when none. */
    readonly predicted_ttft_ms: number | null;
    /** The request's own token gaps, as its client saw them; null with fewer than two tokens. */
    readonly itl_p99_ms: number | null;
    readonly max_gap_ms: number | null;
    /**
     * The longest a token waited in the gateway between its arrival and its write — how much
     * of a gap was the gateway's own; null where nothing relays (the simulator).
     */
    readonly relay_max_ms: number | null;
    readonly e2e_ms: number | null;
    readonly good: boolean;
    /** The first objective it missed (`slo-judge.ts`), null when good. */
    readonly missed: Miss | null;
    /**
     * Present on an attempt that failed and was tried again: not the request's end, which the
     * next attempt's decision (and outcome) records under the same id say.
     */
    readonly tried_again?: true;
  };
}

/** `o` as its class judges it; `predictedTtftMs` from the decision that dispatched it. */
export function outcomeRecord(
  o: RequestOutcome,
  cls: SloClass,
  atMs: Ms,
  predictedTtftMs: Ms | undefined,
  triedAgain = false,
): OutcomeRecord {
  const missed = firstMiss(o, cls.objectives);
  return {
    request_id: o.id,
    tenant: o.tenant,
    class: o.sloClass,
    at_ms: r3(atMs),
    outcome: {
      state: o.state,
      output_tokens: o.outputTokens,
      ttft_ms: nullable(o.ttftMs),
      predicted_ttft_ms: nullable(predictedTtftMs),
      itl_p99_ms: nullable(o.itlP99Ms),
      max_gap_ms: nullable(o.maxStallMs),
      relay_max_ms: nullable(o.relayMaxMs),
      e2e_ms: nullable(o.e2eMs),
      good: missed === null,
      missed,
      ...(triedAgain ? { tried_again: true as const } : {}),
    },
  };
}
