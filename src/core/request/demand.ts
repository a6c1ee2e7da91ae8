/**
 * What one request is predicted to cost, computed once at the door and carried in its decision
 * record: prompt work, predicted output, KV to reserve, total work. A prefix-cache hit counts
 * only as the router expects it (its prefix index).
 */
import type { Ms, Tokens } from './units.ts';

export interface OutputPrediction {
  /** The short end: one answer in ten is shorter. */
  readonly p10: Tokens;
  readonly p50: Tokens;
  readonly p90: Tokens;
  /** Where the prediction came from: the tenant's own history in this class, the class's, or the policy prior. */
  readonly source: 'tenant_effort' | 'tenant' | 'class' | 'prior';
  /**
   * Output tokens KV is reserved for: the p90, or more while the p90 is only the prior's
   * (`OutputLengthModel`). Absent: the p90.
   */
  readonly reserve?: Tokens;
}

/** The output tokens a request's KV is reserved for (`OutputPrediction.reserve`, else its p90). */
export function reservedOutputTokens(o: OutputPrediction): Tokens {
  return o.reserve ?? o.p90;
}

/**
 * The GPU time `outputTokens` (every choice's) took: the prefill, and each token at the rate the
 * predicted work gives a token of one of the `choices`.
 */
export function servedGpuMs(d: Demand, choices: number, outputTokens: Tokens): Ms {
  const outputs = choices * d.output.p90;
  const perToken = outputs > 0 ? (d.workP90Ms - d.prefillMs) / outputs : 0;
  return d.prefillMs + outputTokens * perToken;
}

/** The sequences a request runs: its choices (`n`), 1 when it asks for one. */
export const choicesOf = (req: { readonly choices?: number }): number => req.choices ?? 1;

/**
 * The KV a request reserves: its prompt once — its choices share it through the prefix cache —
 * and each choice's output.
 */
export function reservedKvTokens(
  req: { readonly inputTokens: Tokens; readonly choices?: number },
  o: OutputPrediction,
): Tokens {
  return req.inputTokens + choicesOf(req) * reservedOutputTokens(o);
}

/** The prompt a request must compute: less what the router expects a replica to hold cached. */
export const uncachedTokens = (d: Pick<Demand, 'inputTokens' | 'prefixHitTokens'>): Tokens =>
  d.inputTokens - d.prefixHitTokens;

export interface Demand {
  readonly inputTokens: Tokens;
  /** Prompt tokens expected to come from the prefix cache (0 for a router without a prefix index). */
  readonly prefixHitTokens: Tokens;
  /** Prompt compute on the target replica's profile, alone in a step. */
  readonly prefillMs: Ms;
  /** Steps the prompt's prefill spans (chunked prefill). */
  readonly prefillSteps: number;
  /** Duration of the step that emits the first token, at the current decode batch. */
  readonly firstDecodeMs: Ms;
  /**
   * Disaggregated serving: the prefill pool's queue ahead of the prompt and its KV's transfer
   * to the decode replica — time before its first step there that is neither the control
   * plane's queue nor its prefill (0 when prompts are computed where they decode).
   */
  readonly handoverMs: Ms;
  /** Each choice's output (a request for several has them all alike). */
  readonly output: OutputPrediction;
  /** KV to reserve: prompt + predicted output p90 of each choice, in tokens and bytes. */
  readonly kvTokens: Tokens;
  readonly kvBytes: number;
  /** Prefill plus p90 output of each choice decoded at the current per-token step time. */
  readonly workP90Ms: Ms;
}
