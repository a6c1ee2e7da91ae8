/**
 * The Responses API's `truncation: "auto"`: a conversation too long for the model's context loses
 * items from its beginning, as OpenAI drops them, until it fits with room for the reply; with
 * `disabled` (the default) it is refused (400 `context_length`). Cuts fall only where a user's
 * message begins a turn, so no tool call's output is kept without the call, and no reply
 * without what it answered; the turn the request asks about is always kept, and the
 * `instructions` are no item of the conversation. The room kept for the reply is its
 * `max_output_tokens`, or an eighth of the context when it asks none (`REPLY_SHARE`). The
 * earliest cut that fits is found by bisection, each try sized as the whole request is:
 * a few sizings, not one a turn. Main rule: a gateway and the engines cut alike, each by its
 * own measure of a prompt.
 */
import type { ChatCompletionRequest } from './chat-request.ts';
import type { InputItem } from './response-items.ts';
import { asChatRequest, type ResponsesRequest } from './responses-request.ts';

/** The share of the context kept for a reply that asks no `max_output_tokens`. */
export const REPLY_SHARE = 1 / 8;

/** Tokens a request truncated to fit must leave for its reply. */
function replyRoom(maxOutputTokens: number | null | undefined, context: number): number {
  return maxOutputTokens ?? Math.floor(context * REPLY_SHARE);
}

/** Whether `item` begins a turn: a user's message. */
function beginsTurn(item: InputItem): boolean {
  return (item.type ?? 'message') === 'message' && 'role' in item && item.role === 'user';
}

/**
 * The index of the first item kept of `items`, a conversation oldest first: 0 when `fits(0)`,
 * else the earliest turn's start from which `fits` holds, else the last turn's (the request is
 * then refused as too long, as it would have been). `fits(from)`: whether the request with the
 * items from `from` on fits; the fewer kept, the likelier.
 */
export function firstKept(items: readonly InputItem[], fits: (from: number) => boolean): number {
  if (fits(0)) return 0;
  const starts: number[] = [];
  items.forEach((item, i) => {
    if (i > 0 && beginsTurn(item)) starts.push(i);
  });
  let lo = 0;
  let hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (fits(starts[mid])) hi = mid;
    else lo = mid + 1;
  }
  return starts[Math.min(lo, starts.length - 1)] ?? 0;
}

/**
 * Where the conversation `items` of Responses request `r` starts once held to a model's
 * `context` (0: whole, as it is when `r` asks no truncation), each try sized by `tokens`, the
 * server's own measure of a chat's prompt.
 */
export function truncationStart(
  r: ResponsesRequest,
  items: readonly InputItem[],
  context: number,
  tokens: (chat: ChatCompletionRequest) => number,
): number {
  if (r.truncation !== 'auto') return 0;
  const room = replyRoom(r.max_output_tokens, context);
  const fits = (from: number) =>
    tokens(asChatRequest({ ...r, input: items.slice(from) })) + room <= context;
  return firstKept(items, fits);
}
