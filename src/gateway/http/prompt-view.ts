/**
 * A request's prompt as the policy sees it, without a tokenizer: its size in tokens — counted
 * for token ids, estimated for text, with the fewest tokens the text can be, after vLLM's
 * truncation — and its chained block hashes, which routing matches against replicas' prefix
 * caches (openai/prompt-size.ts). A prompt whose text is estimated whole is planned as its
 * backends have been counting such texts (core/estimate/prompt-scale.ts), its images as
 * planned; its blocks are the estimate's, each as long in the plan as the whole prompt's scale
 * makes it.
 */
import type { Tokens } from '../../core/request/units.ts';
import type { LlmRequest, PrefixBlocks } from '../../core/request/request.ts';
import {
  chatPromptSize,
  completionPromptSize,
  type ChatCompletionRequest,
  type CompletionRequest,
  type PromptBlockHashes,
  type PromptSize,
} from '../../openai/index.ts';
import type { PromptScale } from '../../core/estimate/prompt-scale.ts';
import type { ApiKind } from '../backend.ts';
import type { Parsed } from './serve-admitted.ts';
import type { ImageTokens } from '../../openai/image-size.ts';

/**
 * The block size of the prompt hashes routing matches against replicas' prefix caches: vLLM's
 * default KV block (16 tokens), so a hash covers what a replica's cache entry does.
 */
const PREFIX_BLOCK_TOKENS = 16;

export interface PromptView {
  readonly inputTokens: Tokens;
  /** The fewest tokens it can be, when `inputTokens` is an estimate. */
  readonly inputTokensAtLeast: Tokens | undefined;
  readonly prefix: PrefixBlocks | undefined;
  /** The estimate `inputTokens` was scaled from, and its script (prompt-scale.ts). */
  readonly estimate: LlmRequest['promptEstimate'];
}

/**
 * A request's prompt as the policy sees it, the model's context being `context` tokens and an
 * image `imageTokens`: a prompt's text estimated whole is planned as `scale` says its backends
 * count such a text.
 */
export function promptView(
  kind: ApiKind,
  parsed: Parsed,
  context: Tokens,
  imageTokens?: ImageTokens,
  scale?: PromptScale,
): PromptView {
  const size =
    kind === 'chat'
      ? chatPromptSize(parsed as ChatCompletionRequest, context, imageTokens)
      : completionPromptSize(parsed as CompletionRequest, context);
  const script = size.script;
  const estimate =
    script === undefined
      ? undefined
      : { tokens: size.tokens, script, imageTokens: size.imageTokens ?? 0 };
  const planned = plannedTokens(size, scale);
  const view = sized(planned, size.atLeast, context, (tokens) =>
    blocksAt(size, tokens, planned / size.tokens),
  );
  return { ...view, estimate };
}

/**
 * A prompt's tokens as planned, before they are held under the context: its text estimated
 * whole as `scale` says its backends count such a text, its images as sized; any other as sized.
 */
export function plannedTokens(
  size: Pick<PromptSize, 'tokens' | 'script' | 'imageTokens'> & { readonly atLeast?: Tokens },
  scale?: PromptScale,
): Tokens {
  const { script } = size;
  if (script === undefined || scale === undefined) return size.tokens;
  const images = size.imageTokens ?? 0;
  return Math.max(size.atLeast ?? 1, scale.tokens(script, size.tokens - images) + images);
}

/**
 * The prompt's block hashes over its first `tokens` as planned, each block `PREFIX_BLOCK_TOKENS`
 * of the estimate's and `ratio` (planned ÷ estimated) as many of the plan's: matched against a
 * replica's cache, a block stands for what the backend computes of it.
 */
function blocksAt(size: PromptSize, tokens: Tokens, ratio: number): PromptBlockHashes {
  if (ratio === 1) return size.hashes(tokens, PREFIX_BLOCK_TOKENS);
  const { hashes } = size.hashes(Math.floor(tokens / ratio), PREFIX_BLOCK_TOKENS);
  return { blockTokens: PREFIX_BLOCK_TOKENS * ratio, hashes };
}

/**
 * A text prompt's size is an estimate: refused only on the fewest tokens it can be, and planned
 * as no longer than the `context` the backend will hold it to. A prompt sure to be over the
 * context is not hashed: the contract gate refuses it unrouted.
 */
function sized(
  estimate: Tokens,
  atLeast: Tokens | undefined,
  context: Tokens,
  hash: (tokens: Tokens) => PromptBlockHashes,
): Omit<PromptView, 'estimate'> {
  const inputTokens =
    atLeast === undefined ? estimate : Math.min(estimate, Math.max(atLeast, context - 1));
  if ((atLeast ?? inputTokens) >= context) {
    return { inputTokens, inputTokensAtLeast: atLeast, prefix: undefined };
  }
  const prefix = hash(inputTokens);
  return {
    inputTokens,
    inputTokensAtLeast: atLeast,
    prefix: prefix.hashes.length > 0 ? prefix : undefined,
  };
}
