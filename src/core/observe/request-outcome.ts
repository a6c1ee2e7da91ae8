/**
 * What happened to one logical request (all its attempts), as the measurement sees it. The
 * simulator and the gateway both produce these; every report number is computed from them.
 */
import type { Ms, Tokens } from '../request/units.ts';
import type { SloClassName } from '../request/slo-classes.ts';

export type FinalState = 'completed' | 'failed' | 'cancelled' | 'rejected' | 'running';

/** TTFT's parts: arrival → first prefill step, prefill steps before the last, the step that emitted the first token. */
export interface TtftParts {
  readonly queueMs: Ms;
  readonly prefillMs: Ms;
  readonly firstDecodeMs: Ms;
}

export interface RequestOutcome extends Partial<TtftParts> {
  readonly id: string;
  readonly tenant: string;
  readonly sloClass: SloClassName;
  readonly state: FinalState;
  /** Admitted on its final attempt (rejected requests were not). */
  readonly admitted: boolean;
  readonly inputTokens: Tokens;
  /** Tokens streamed back to the client (every choice's, of a request for several). */
  readonly outputTokens: Tokens;
  /**
   * A request for several choices (`n`): the most tokens one choice streamed. Its TPOT is that
   * stream's: choices decode side by side, and the longest ends last.
   */
  readonly longestChoiceTokens?: Tokens;
  /** Prompt tokens actually computed by the engine (after prefix-cache hits, including recomputes). */
  readonly cachedTokens: Tokens;
  /** From arrival; undefined when no token was produced. */
  readonly ttftMs?: Ms;
  readonly e2eMs?: Ms;
  /** This request's own token gaps. */
  readonly itlP99Ms?: Ms;
  readonly maxStallMs?: Ms;
  /**
   * The longest a token waited in the gateway between its arrival from the replica and its
   * write to the client: the gateway's own share of a gap. Undefined where nothing relays (the
   * simulator).
   */
  readonly relayMaxMs?: Ms;
  readonly attempts: number;
  readonly preemptions: number;
  readonly failReason?: string;
  readonly rejectReason?: string;
  /** Waited in the deferred queue on some attempt. */
  readonly deferred?: boolean;
  /** Degrade level applied on the final attempt, when any. */
  readonly degradeLevel?: number;
}

/**
 * TPOT as vLLM defines it: (E2E − TTFT) / (output tokens − 1), only for more than one token; of
 * several choices, over the longest one's tokens.
 */
export function tpotMs(o: RequestOutcome): Ms | undefined {
  const tokens = o.longestChoiceTokens ?? o.outputTokens;
  if (o.ttftMs === undefined || o.e2eMs === undefined || tokens < 2) return undefined;
  return (o.e2eMs - o.ttftMs) / (tokens - 1);
}
