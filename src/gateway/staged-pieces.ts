/**
 * A staged prompt's leading pieces as requests an OpenAI-compatible server with a prefix cache
 * answers (`core/routing/staged-prefill.ts`): piece k is the request cut after the first
 * `cachedTokens + k × pieceTokens` tokens of its prompt, asking for one token, not streamed.
 * Sent one after another before the request itself, each leaves its prefix in the server's cache
 * for the next, so the server computes about one piece a request. Cuts follow the gateway's own
 * token estimate (`openai/prompt-tokens.ts`): a chat prompt inside the message where the estimate
 * reaches the cut, the messages before it whole and none after; a text prompt at the characters
 * that estimate it; a token-id prompt exactly. The blocks wholly before a cut are the full
 * prompt's; the few the tokenizer cuts differently are computed again by the next piece. A piece
 * keeps only what shapes its prompt, so it asks for no grammar, log probabilities or choices.
 */
import type { ChatMessage, ContentPart } from '../openai/chat-request.ts';
import { estimateChatTokens, TOKENS_PER_MESSAGE } from '../openai/prompt-tokens.ts';
import { charsWithin, textUnits, UNITS_PER_TOKEN } from '../openai/text-weight.ts';
import type { Tokens } from '../core/request/units.ts';
import type { ApiKind, StagedCall } from './backend.ts';

/** What a piece keeps of its request's body: the fields that shape the prompt it renders. */
const PROMPT_FIELDS = [
  'model',
  'messages',
  'prompt',
  'tools',
  'chat_template',
  'chat_template_kwargs',
  'add_generation_prompt',
  'continue_final_message',
  'documents',
  'mm_processor_kwargs',
  'add_special_tokens',
  'cache_salt',
  'priority',
] as const;

/**
 * The bodies of the pieces sent before `body`, in order; none where the prompt cannot be cut (a
 * batch of prompts, a prompt the server truncates itself) or is a single piece.
 */
export function pieceBodies(
  kind: ApiKind,
  body: Readonly<Record<string, unknown>>,
  staged: StagedCall,
): Record<string, unknown>[] {
  const { pieceTokens, cachedTokens, promptTokens } = staged;
  if (pieceTokens <= 0 || body.truncate_prompt_tokens != null) return [];
  const bodies: Record<string, unknown>[] = [];
  const prefix =
    kind === 'chat' ? chatPrefixes(body) : (cut: Tokens) => completionPrefix(body, cut);
  if (prefix === undefined) return [];
  for (let cut = cachedTokens + pieceTokens; cut < promptTokens; cut += pieceTokens) {
    const prompt = prefix(cut);
    if (prompt === undefined) return [];
    const piece: Record<string, unknown> = { max_tokens: 1, stream: false };
    for (const f of PROMPT_FIELDS) if (body[f] !== undefined) piece[f] = body[f];
    bodies.push({ ...piece, ...prompt });
  }
  return bodies;
}

/**
 * The chat's messages up to where the estimate reaches a cut, each message's estimate taken once
 * for every cut; not a chat: none.
 */
function chatPrefixes(body: Readonly<Record<string, unknown>>) {
  const messages = body.messages as ChatMessage[] | undefined;
  if (!Array.isArray(messages)) return undefined;
  const tools = body.tools as Parameters<typeof estimateChatTokens>[0]['tools'];
  const start = estimateChatTokens({ messages: [], tools });
  const none = estimateChatTokens({ messages: [] });
  const costs = messages.map((m) => estimateChatTokens({ messages: [m] }) - none);
  return (cut: Tokens) => {
    let used = start;
    const kept: ChatMessage[] = [];
    for (let i = 0; i < messages.length; i++) {
      if (used + costs[i] <= cut) {
        kept.push(messages[i]);
        used += costs[i];
        continue;
      }
      const units = (cut - used - TOKENS_PER_MESSAGE) * UNITS_PER_TOKEN;
      if (units > 0) kept.push(cutMessage(messages[i], units));
      break;
    }
    return { messages: kept };
  };
}

/**
 * `m` with its text cut where it reaches `units` of weight (text-weight.ts): its parts after the
 * cut, and its calls, dropped.
 */
function cutMessage(m: ChatMessage, units: number): ChatMessage {
  const { tool_calls: _calls, ...rest } = m;
  const c = m.content;
  if (c == null) return rest;
  if (typeof c === 'string') return { ...rest, content: cutText(c, units) };
  const parts: ContentPart[] = [];
  let left = units;
  for (const p of c) {
    if (p.type !== 'text') {
      parts.push(p);
      continue;
    }
    const weight = textUnits(p.text);
    if (weight >= left) {
      parts.push({ ...p, text: cutText(p.text, left) });
      break;
    }
    parts.push(p);
    left -= weight;
  }
  return { ...rest, content: parts };
}

/** A text or token-id prompt up to `cut` tokens by the estimate; a batch of prompts: none. */
function completionPrefix(body: Readonly<Record<string, unknown>>, cut: Tokens) {
  const prompt = body.prompt;
  if (typeof prompt === 'string') return { prompt: cutText(prompt, cut * UNITS_PER_TOKEN) };
  if (Array.isArray(prompt) && prompt.every((t) => typeof t === 'number')) {
    return { prompt: prompt.slice(0, cut) };
  }
  return undefined;
}

/** The start of `text` that weighs at most `units`, not splitting a surrogate pair. */
function cutText(text: string, units: number): string {
  return text.slice(0, charsWithin(text, units));
}
