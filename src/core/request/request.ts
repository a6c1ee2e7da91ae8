/**
 * The request as the control plane sees it: sizes, who sent it, what it is owed. Prompts never
 * reach policy code; only their token counts and prefix-block hashes do.
 */
import type { Ms, Tokens } from './units.ts';
import type { SloClassName } from './slo-classes.ts';

/** Hashes of consecutive prompt blocks, each `blockTokens` long. Hash i identifies the whole
 * prefix up to and including block i (chained, as vLLM's block hashes and Mooncake's hash_ids). */
export interface PrefixBlocks {
  readonly blockTokens: Tokens;
  readonly hashes: readonly string[];
}

export interface LlmRequest {
  readonly id: string;
  readonly arrivalMs: Ms;
  readonly inputTokens: Tokens;
  /** Tokens the model will generate before it stops (known to the simulator, not to policy). */
  readonly outputTokens: Tokens;
  /** The client's cap on output tokens, when it set one. */
  readonly maxTokens?: Tokens;
  readonly tenant: string;
  readonly sloClass: SloClassName;
  readonly session?: string;
  readonly prefix?: PrefixBlocks;
}
