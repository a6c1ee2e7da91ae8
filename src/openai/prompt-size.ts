/**
 * A request's prompt as a server sizes it without a tokenizer (prompt-tokens.ts): its size in
 * tokens — estimated for text, counted for token ids — the fewest tokens its text can be, and
 * its chained block hashes (prefix-hashes.ts); after vLLM's `truncate_prompt_tokens`, which
 * keeps the prompt's last k tokens (-1: as many as the model's context holds). A text prompt
 * cut that way starts where no estimate can say, so it is not hashed; token ids cut are hashed
 * as kept. Main rule: the gateway and the engines size a prompt here, alike.
 */
import type { ChatCompletionRequest } from './chat-request.ts';
import { promptList, type CompletionRequest } from './completion-request.ts';
import { invalidRequest } from './errors.ts';
import { chatBlockHashes, completionBlockHashes, type PromptBlockHashes } from './prefix-hashes.ts';
import type { PromptScript } from '../core/request/request.ts';
import {
  estimateChatPrompt,
  estimateCompletionTokens,
  estimateTextPrompt,
  leastChatTokens,
  leastTextTokens,
} from './prompt-tokens.ts';
import type { ImageTokens } from './image-size.ts';

export interface PromptSize {
  readonly tokens: number;
  /** The fewest tokens it can be, when `tokens` is an estimate. */
  readonly atLeast: number | undefined;
  /** vLLM's truncation cut it to its last `tokens`. */
  readonly cut: boolean;
  /**
   * The script of a prompt whose text `tokens` estimates whole — not cut: what a backend's
   * count of it can scale the text's estimate by (core/estimate/prompt-scale.ts). Absent for
   * any other.
   */
  readonly script?: PromptScript;
  /** Of `tokens`, those of its images (as many as planned, whatever the scale): 0 for text. */
  readonly imageTokens?: number;
  /** Its block hashes, blocks of `blockTokens`, as `tokens` long; none for text cut. */
  hashes(tokens: number, blockTokens: number): PromptBlockHashes;
}

/**
 * A chat's prompt, the model's context being `context` tokens and an image `imageTokens` (known
 * wherever the chat holds one: image-parts.ts's `imagesSizable`).
 */
export function chatPromptSize(
  req: ChatCompletionRequest,
  context: number,
  imageTokens?: ImageTokens,
): PromptSize {
  const prompt = { messages: req.messages, tools: req.tools, imageTokens };
  const { tokens: estimate, script, imageTokens: images } = estimateChatPrompt(prompt);
  const keep = kept(req.truncate_prompt_tokens, context);
  if (estimate <= keep) {
    return {
      tokens: estimate,
      atLeast: leastChatTokens(prompt),
      cut: false,
      script,
      imageTokens: images,
      hashes: (tokens, block) => chatBlockHashes(prompt, tokens, block, req.cache_salt),
    };
  }
  return {
    tokens: keep,
    atLeast: Math.min(leastChatTokens(prompt), keep),
    cut: true,
    hashes: none,
  };
}

/** A completion's one prompt, the model's context being `context` tokens. */
export function completionPromptSize(req: CompletionRequest, context: number): PromptSize {
  const prompt = promptList(req)[0] ?? '';
  const text = typeof prompt === 'string';
  const sized = text ? estimateTextPrompt(prompt) : undefined;
  const estimate = sized?.tokens ?? estimateCompletionTokens(prompt);
  const keep = kept(req.truncate_prompt_tokens, context);
  if (estimate <= keep) {
    return {
      tokens: estimate,
      atLeast: text ? leastTextTokens(prompt) : undefined,
      cut: false,
      ...(sized === undefined ? {} : { script: sized.script }),
      hashes: (tokens, block) => completionBlockHashes(prompt, tokens, block, req.cache_salt),
    };
  }
  if (text)
    return {
      tokens: keep,
      atLeast: Math.min(leastTextTokens(prompt), keep),
      cut: true,
      hashes: none,
    };
  const last = prompt.slice(-keep);
  return {
    tokens: keep,
    atLeast: undefined,
    cut: true,
    hashes: (tokens, block) => completionBlockHashes(last, tokens, block, req.cache_salt),
  };
}

/** The most tokens a prompt keeps: vLLM's truncation, else all of it. */
function kept(truncate: number | null | undefined, context: number): number {
  if (truncate == null) return Infinity;
  if (truncate === -1) return context;
  if (truncate > context) {
    throw invalidRequest(
      `truncate_prompt_tokens: expected at most the model's context (${context} tokens), or -1, got ${truncate}`,
      'truncate_prompt_tokens',
    );
  }
  return truncate;
}

const none = (_tokens: number, blockTokens: number): PromptBlockHashes => ({
  blockTokens,
  hashes: [],
});
