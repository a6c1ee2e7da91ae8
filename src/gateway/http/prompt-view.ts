/**
 * A request's prompt as the policy sees it, without a tokenizer: its size in tokens — counted
 * for token ids, estimated for text, with the fewest tokens the text can be, after vLLM's
 * truncation — and its chained block hashes, which routing matches against replicas' prefix
 * caches (openai/prompt-size.ts).
 */
import type { Tokens } from '../../core/request/units.ts';
import type { PrefixBlocks } from '../../core/request/request.ts';
import {
  chatPromptSize,
  completionPromptSize,
  type ChatCompletionRequest,
  type CompletionRequest,
  type PromptBlockHashes,
} from '../../openai/index.ts';
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
}

/**
 * A request's prompt as the policy sees it, the model's context being `context` tokens and an
 * image `imageTokens`.
 */
export function promptView(
  kind: ApiKind,
  parsed: Parsed,
  context: Tokens,
  imageTokens?: ImageTokens,
): PromptView {
  const size =
    kind === 'chat'
      ? chatPromptSize(parsed as ChatCompletionRequest, context, imageTokens)
      : completionPromptSize(parsed as CompletionRequest, context);
  return sized(size.tokens, size.atLeast, context, (tokens) =>
    size.hashes(tokens, PREFIX_BLOCK_TOKENS),
  );
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
): PromptView {
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
