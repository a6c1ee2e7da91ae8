/**
 * A request's prompt as the policy sees it, without a tokenizer: its size in tokens — counted
 * for token ids, estimated for text, with the fewest tokens the text can be — and its chained
 * block hashes, which routing matches against replicas' prefix caches.
 */
import type { Tokens } from '../../core/request/units.ts';
import type { PrefixBlocks } from '../../core/request/request.ts';
import {
  chatBlockHashes,
  completionBlockHashes,
  estimateChatTokens,
  estimateCompletionTokens,
  leastChatTokens,
  leastTextTokens,
  promptList,
  type ChatCompletionRequest,
} from '../../openai/index.ts';
import type { ApiKind } from '../backend.ts';
import type { Parsed } from './serve-admitted.ts';

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
 * A text prompt's size is an estimate: refused only on the fewest tokens it can be, and planned
 * as no longer than the `context` the backend will hold it to. A prompt sure to be over the
 * context is not hashed: the contract gate refuses it unrouted.
 */
export function promptView(kind: ApiKind, parsed: Parsed, context: Tokens): PromptView {
  const messages = kind === 'chat' ? (parsed as ChatCompletionRequest).messages : undefined;
  const prompt = messages === undefined ? promptList(parsed as never)[0] : undefined;
  let estimate: Tokens;
  let atLeast: Tokens | undefined;
  if (messages !== undefined) {
    estimate = estimateChatTokens(messages);
    atLeast = leastChatTokens(messages);
  } else {
    estimate = estimateCompletionTokens(prompt as NonNullable<typeof prompt>);
    // Token ids are counted, not estimated.
    atLeast = typeof prompt === 'string' ? leastTextTokens(prompt) : undefined;
  }
  const inputTokens =
    atLeast === undefined ? estimate : Math.min(estimate, Math.max(atLeast, context - 1));
  if ((atLeast ?? inputTokens) >= context) {
    return { inputTokens, inputTokensAtLeast: atLeast, prefix: undefined };
  }
  const hashes =
    messages !== undefined
      ? chatBlockHashes(messages, inputTokens, PREFIX_BLOCK_TOKENS)
      : completionBlockHashes(
          prompt as NonNullable<typeof prompt>,
          inputTokens,
          PREFIX_BLOCK_TOKENS,
        );
  const prefix = hashes.hashes.length > 0 ? hashes : undefined;
  return { inputTokens, inputTokensAtLeast: atLeast, prefix };
}
