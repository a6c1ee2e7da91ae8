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

/**
 * An agent's tool call in the middle of a generation: after `afterTokens` output tokens the
 * request pauses for `waitMs` (the tool runs), then `resultTokens` of tool output join its
 * context and generation goes on. Known to the simulator's workload, not to policy.
 */
export interface ToolCall {
  readonly afterTokens: Tokens;
  readonly waitMs: Ms;
  readonly resultTokens: Tokens;
}

/** How much a reasoning model is asked to think (vLLM's chat `reasoning_effort`). */
export const REASONING_EFFORTS = ['low', 'medium', 'high'] as const;
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number];

/**
 * The script of a prompt's text, as the gateway's estimate weighs it (openai/text-weight.ts):
 * `latin`, every character of Latin, Greek or Cyrillic weight; `other`, any other.
 */
export const PROMPT_SCRIPTS = ['latin', 'other'] as const;
export type PromptScript = (typeof PROMPT_SCRIPTS)[number];

/** The most choices one request may ask for (`n`): OpenAI's limit. */
export const MAX_CHOICES = 128;

export interface LlmRequest {
  readonly id: string;
  readonly arrivalMs: Ms;
  readonly inputTokens: Tokens;
  /**
   * When `inputTokens` is an estimate (a gateway's, from the prompt's text): the fewest tokens
   * the prompt can be. The context window refuses only what this rules out; a prompt whose
   * estimate alone does not fit is left to the backend, which counts it. Absent: exact.
   */
  readonly inputTokensAtLeast?: Tokens;
  /**
   * When `inputTokens` comes from a gateway's estimate of the prompt's whole text (not cut):
   * the estimate, the script it weighed and the tokens of it that are its images'.
   * `inputTokens` is the estimate's text scaled to what its backends count
   * (`../estimate/prompt-scale.ts`), and its images as planned; the count of a prompt without
   * images, at its end, teaches the scale.
   */
  readonly promptEstimate?: {
    readonly tokens: Tokens;
    readonly script: PromptScript;
    readonly imageTokens: Tokens;
  };
  /** Tokens the model will generate before it stops (known to the simulator, not to policy). */
  readonly outputTokens: Tokens;
  /** The client's cap on output tokens, when it set one (each choice's). */
  readonly maxTokens?: Tokens;
  /**
   * Tokens it generates at the least, whatever its model would stop at: vLLM's `min_tokens`, or
   * under `ignore_eos` its whole cap (`Infinity` without one: the context left).
   */
  readonly minTokens?: Tokens;
  /**
   * Choices sampled from the one prompt (OpenAI's `n`): as many sequences, each its own output,
   * sharing the prompt's KV through the prefix cache (vLLM V1). Absent: 1.
   */
  readonly choices?: number;
  readonly tenant: string;
  /** The class the request asks for; admission checks the tenant is granted it. */
  readonly sloClass: SloClassName;
  readonly session?: string;
  readonly prefix?: PrefixBlocks;
  /** Model asked for; undefined means the fleet's model. */
  readonly model?: string;
  /** LoRA adapter asked for, when any. */
  readonly adapter?: string;
  /** Whether the client asked for a streamed response (the simulator's clients stream). */
  readonly stream?: boolean;
  /** Agent-style requests: the request that spawned this one and the root of the tree. */
  readonly parentId?: string;
  readonly rootId?: string;
  /** The client's own completion deadline (clock ms), when it set one; the sooner one binds. */
  readonly deadlineMs?: Ms;
  /** Attempt number, 1 for the first; a retry says so (header or idempotency key seen before). */
  readonly attempt?: number;
  /** The client's Idempotency-Key: attempts sharing one are the same logical request. */
  readonly idempotencyKey?: string;
  /**
   * Taken over from a gateway replica that drained or was lost (a background response): it
   * arrived there, and was counted there as demand.
   */
  readonly handedOver?: true;
  /** Prompt tokens the client marked optional (droppable context, degrade level 2). */
  readonly optionalInputTokens?: Tokens;
  /** Tool calls it makes while generating, in output order (agents; simulator workloads). */
  readonly toolCalls?: readonly ToolCall[];
  /**
   * The reasoning effort it asked for: its output lengths are learned apart from its tenant's
   * others (`../estimate/output-length-model.ts`), a high effort's thinking being far longer.
   */
  readonly reasoningEffort?: ReasoningEffort;
}
