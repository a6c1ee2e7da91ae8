/**
 * Prompt size without a tokenizer. The rule, chosen to match OpenAI's own rule of thumb and the
 * chat-template overhead of Llama-style models:
 *
 *   text tokens    = ceil(characters / 4), characters counted as Unicode code points
 *   chat prompt    = Σ over messages (4 + text tokens of its content and name) + 3
 *   text prompt    = max(1, text tokens)
 *
 * The 4 per message stand for the role header and end-of-turn markers, the 3 for the assistant
 * header that primes the reply. Main rule: an estimate is never below 1 — a real prompt always
 * holds at least a BOS token — and the same text always gives the same count.
 */
import { messageText, type ChatMessage } from './chat-request.ts';

export const CHARS_PER_TOKEN = 4;
export const TOKENS_PER_MESSAGE = 4;
export const TOKENS_PER_REPLY = 3;

/** Code points, not UTF-16 units, so an emoji counts once. */
function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

export function estimateTextTokens(text: string): number {
  return Math.ceil(codePoints(text) / CHARS_PER_TOKEN);
}

export function estimateChatTokens(messages: readonly ChatMessage[]): number {
  let total = TOKENS_PER_REPLY;
  for (const m of messages) {
    total += TOKENS_PER_MESSAGE + estimateTextTokens(messageText(m));
    if (m.name != null) total += estimateTextTokens(m.name);
  }
  return total;
}

export function estimateCompletionTokens(prompt: string): number {
  return Math.max(1, estimateTextTokens(prompt));
}

/**
 * The chat prompt as one string, role markers included: what prefix caching sees. Two requests
 * that share their first messages share a prefix of this text.
 */
export function renderChatPrompt(messages: readonly ChatMessage[]): string {
  let out = '';
  for (const m of messages) out += `<|${m.role}|>${m.name ?? ''}\n${messageText(m)}\n`;
  return out;
}
