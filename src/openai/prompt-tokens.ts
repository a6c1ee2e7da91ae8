/**
 * Prompt size without a tokenizer. The rule, chosen to match OpenAI's own rule of thumb and the
 * chat-template overhead of Llama-style models:
 *
 *   text tokens    = ceil(Σ its characters' weights): ¼ a Latin, Greek or Cyrillic one (4
 *                    characters a token), 0.8 a Chinese, Japanese or Korean one, 3 an emoji,
 *                    ½ any other (text-weight.ts, measured against Llama 3's tokenizer)
 *   chat prompt    = [4 + text tokens of the tools' JSON, when tools are offered]
 *                    + Σ over messages (4 + text tokens of its content, name and calls
 *                                       + the model's tokens for each of its images) + 3
 *   text prompt    = max(1, text tokens)
 *   token prompt   = its number of token ids (exact, not an estimate)
 *
 * The 4 per message stand for the role header and end-of-turn markers, the 3 for the assistant
 * header that primes the reply. Chat templates render the tools offered as their JSON
 * definitions ahead of the conversation (Llama 3.1's and Hermes' in the first turn), and each
 * call an assistant made as JSON of its name and arguments, so those count as text too. Main
 * rule: an estimate is never below 1 — a real prompt always holds at least a BOS token — and
 * the same text always gives the same count. An image is the tokens the served model makes of it
 * (image-size.ts), by the rule the caller says, having refused images when it has none.
 */
import type { ChatMessage } from './chat-request.ts';
import { LATIN_UNITS, textUnits, UNITS_PER_TOKEN } from './text-weight.ts';
import type { PromptScript } from '../core/request/request.ts';
import { imagePartTokens, imagesTokens, imageText, leastImagesTokens } from './image-parts.ts';
import type { ImageTokens } from './image-size.ts';
import type { CompletionPrompt } from './completion-request.ts';
import type { ChatTool } from './tool-fields.ts';

/** A chat's prompt as its template renders it: the tools offered, then the messages. */
export interface ChatPrompt {
  readonly messages: readonly ChatMessage[];
  readonly tools?: readonly ChatTool[] | null;
  /** The prompt tokens an image takes in the served model; none known: no images. */
  readonly imageTokens?: ImageTokens;
}

export const CHARS_PER_TOKEN = 4;
export const TOKENS_PER_MESSAGE = 4;
export const TOKENS_PER_REPLY = 3;

/** A text's tokens: its characters' weights by script (text-weight.ts), rounded up. */
export function estimateTextTokens(text: string): number {
  return Math.ceil(textUnits(text) / UNITS_PER_TOKEN);
}

/**
 * The longest one token can be, in UTF-8 bytes: Llama 3's vocabulary's longest (a run of 128
 * spaces). An estimate can be far off either way (36,000 spaces are 9,000 by it and 282 Llama 3
 * tokens; CJK text runs over it), so a prompt is refused for its size on the fewest tokens its
 * bytes can be, and otherwise left to the backend, which counts.
 */
export const MAX_TOKEN_BYTES = 128;

/** The fewest tokens a text prompt can be: no token is longer than MAX_TOKEN_BYTES. */
export function leastTextTokens(text: string): number {
  return Math.max(1, Math.ceil(Buffer.byteLength(text) / MAX_TOKEN_BYTES));
}

/**
 * The fewest tokens a chat prompt can be: its texts' alone, whatever the chat template adds, and
 * its images what they are sure to take (image-size.ts's `sizeImage`: an image the rule reads
 * the size of, exactly; one by URL, the fewest any takes; a figure's, none — it is the
 * operator's planning number, not a bound).
 */
export function leastChatTokens(prompt: ChatPrompt): number {
  let bytes = Buffer.byteLength(toolsText(prompt.tools));
  let images = 0;
  for (const m of prompt.messages) {
    bytes += Buffer.byteLength(messageText(m)) + Buffer.byteLength(m.name ?? '');
    bytes += Buffer.byteLength(callsText(m));
    if (prompt.imageTokens !== undefined)
      images += leastImagesTokens(m.content, prompt.imageTokens);
  }
  return Math.max(1, Math.ceil(bytes / MAX_TOKEN_BYTES)) + images;
}

export function estimateChatTokens(prompt: ChatPrompt): number {
  return estimateChatPrompt(prompt).tokens;
}

/** A prompt's estimate, the script its text weighs as, and the part its images take. */
export interface PromptEstimate {
  readonly tokens: number;
  readonly script: PromptScript;
  readonly imageTokens: number;
}

/** A chat prompt's estimate (`estimateChatTokens`) and its script, from one walk of its text. */
export function estimateChatPrompt(prompt: ChatPrompt): PromptEstimate {
  const text = new ScriptedTokens();
  const tools = toolsText(prompt.tools);
  let total = TOKENS_PER_REPLY + (tools === '' ? 0 : TOKENS_PER_MESSAGE + text.tokens(tools));
  const images = prompt.imageTokens;
  let imageTokens = 0;
  for (const m of prompt.messages) {
    total += TOKENS_PER_MESSAGE + text.tokens(messageText(m));
    if (images !== undefined) imageTokens += imagesTokens(m.content, images);
    if (m.name != null) total += text.tokens(m.name);
    if (m.tool_calls != null) total += text.tokens(callsText(m));
  }
  return { tokens: total + imageTokens, script: text.script, imageTokens };
}

/** A completion prompt's size: estimated for text, exact for token ids. */
export function estimateCompletionTokens(prompt: CompletionPrompt): number {
  return typeof prompt === 'string'
    ? Math.max(1, estimateTextTokens(prompt))
    : Math.max(1, prompt.length);
}

/** A text completion prompt's estimate and its script. */
export function estimateTextPrompt(prompt: string): PromptEstimate {
  const text = new ScriptedTokens();
  return { tokens: Math.max(1, text.tokens(prompt)), script: text.script, imageTokens: 0 };
}

/**
 * Texts' estimates, noting whether any character weighed other than a Latin one: every other
 * weighs more than a Latin character's per UTF-16 unit, so a text is Latin exactly when it
 * weighs LATIN_UNITS a unit.
 */
class ScriptedTokens {
  script: PromptScript = 'latin';

  tokens(text: string): number {
    const units = textUnits(text);
    if (units !== LATIN_UNITS * text.length) this.script = 'other';
    return Math.ceil(units / UNITS_PER_TOKEN);
  }
}

/** Token ids render in this base, CHARS_PER_TOKEN digits each. */
export const TOKEN_ID_RADIX = 36;

/**
 * The largest token id a prompt may hold: what CHARS_PER_TOKEN base-36 digits can render
 * (1,679,615), far above any real vocabulary (Llama 3: 128,256; Gemma 3: 262,144).
 */
export const MAX_TOKEN_ID = TOKEN_ID_RADIX ** CHARS_PER_TOKEN - 1;

/**
 * A completion prompt as the text prefix hashing sees (prefix-hashes.ts): text as it is; token
 * ids as exactly CHARS_PER_TOKEN base-36 digits each (id 5 → `0005`, 128000 → `2qrk`;
 * MAX_TOKEN_ID keeps every id within that width). So the hashing's blocks of blockTokens ×
 * CHARS_PER_TOKEN characters hold exactly blockTokens tokens, and two token prompts share block
 * hash j exactly when they share their first (j + 1) × blockTokens ids. The rendering is for
 * hashing only, never shown; a text prompt made of the same digits would hash alike, which no
 * real prompt does.
 */
export function renderCompletionPrompt(prompt: CompletionPrompt): string {
  if (typeof prompt === 'string') return prompt;
  let out = '';
  for (const id of prompt) out += id.toString(TOKEN_ID_RADIX).padStart(CHARS_PER_TOKEN, '0');
  return out;
}

/**
 * The chat prompt as one string, role markers included: what prefix caching sees. Two requests
 * that offer the same tools and share their first messages share a prefix of this text.
 */
export function renderChatPrompt(prompt: ChatPrompt): string {
  let out = '';
  chatPromptPieces(prompt, (piece) => (out += piece));
  return out;
}

/**
 * renderChatPrompt's text in order, piece by piece: the tools offered (`<|tools|>`, newline,
 * their JSON, newline), then each message: `<|role|>name`, newline, the text (an image as its
 * digest's text, imageText), its calls, newline.
 */
export function chatPromptPieces(prompt: ChatPrompt, piece: (text: string) => void): void {
  const images = prompt.imageTokens;
  const tools = toolsText(prompt.tools);
  if (tools !== '') piece(`<|tools|>\n${tools}\n`);
  for (const m of prompt.messages) {
    piece(`<|${m.role}|>${m.name ?? ''}\n`);
    const c = m.content;
    // A message's text (messageText) without joining its parts.
    if (typeof c === 'string') piece(c);
    else if (c != null) {
      for (let i = 0; i < c.length; i++) {
        if (i > 0) piece('\n');
        const p = c[i];
        piece(p.type === 'text' ? p.text : imageText(p, imagePartTokens(p, images)));
      }
    }
    if (m.tool_calls != null && m.tool_calls.length > 0) piece(callsText(m));
    piece('\n');
  }
}

/**
 * A message's text: the string, or its text parts joined by newlines (as vLLM joins them); its
 * images are not text.
 */
export function messageText(m: ChatMessage): string {
  const c = m.content;
  if (c == null) return '';
  if (typeof c === 'string') return c;
  const texts: string[] = [];
  for (const p of c) if (p.type === 'text') texts.push(p.text);
  return texts.join('\n');
}

/** The tools' definitions as JSON, once per request (estimated, bounded and hashed); none: ''. */
function toolsText(tools: readonly ChatTool[] | null | undefined): string {
  if (tools == null || tools.length === 0) return '';
  let text = TOOLS_TEXT.get(tools);
  if (text === undefined) TOOLS_TEXT.set(tools, (text = JSON.stringify(tools)));
  return text;
}
const TOOLS_TEXT = new WeakMap<readonly ChatTool[], string>();

/** The calls an assistant's message made, one JSON object of name and arguments each. */
function callsText(m: ChatMessage): string {
  const calls = m.tool_calls;
  if (calls == null) return '';
  let out = '';
  for (const c of calls)
    out += `{"name": ${JSON.stringify(c.function.name)}, "arguments": ${c.function.arguments}}`;
  return out;
}
