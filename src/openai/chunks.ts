/**
 * Streamed responses as OpenAI sends them: Server-Sent Events whose `data:` lines are
 * `chat.completion.chunk` or `text_completion` objects, then, when the client asked with
 * `stream_options.include_usage`, one chunk with empty `choices` and the usage, then
 * `data: [DONE]`. Main rule: a chat stream opens with a chunk carrying the role, carries one
 * chunk per token, and closes with a chunk whose delta is empty and whose finish_reason is set;
 * while usage is requested every other chunk carries `usage: null`, as OpenAI's do, or, with
 * vLLM's `continuous_usage_stats`, the usage so far: the prompt's and its choice's tokens.
 */
import type { FinishReason, Usage } from './responses.ts';
import type { ToolCall } from './tool-fields.ts';

/** What every chunk of one response repeats. */
export interface ChunkHead {
  readonly id: string;
  /** Unix seconds. */
  readonly created: number;
  readonly model: string;
  /** The client asked for a usage chunk at the end. */
  readonly includeUsage: boolean;
  /** And for the usage so far on every chunk (vLLM's `continuous_usage_stats`). */
  readonly continuousUsage?: boolean;
  /** The tier it was served in, when its request named one (`servedTier`): every chunk says. */
  readonly serviceTier?: string;
}

/** The usage so far a chunk carries when the client asked it of every chunk (vLLM's). */
export interface ChunkUsage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
}

/** The usage so far: `prompt` tokens, and `completion` of the chunk's choice. */
export function usageSoFar(prompt: number, completion: number): ChunkUsage {
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
  };
}

/**
 * A piece of a tool call as it streams: the first piece of a call names it (`id`, `type`, the
 * function's `name`), the next add to its `arguments` text; `index` says which call of the
 * reply it belongs to.
 */
export interface ToolCallDelta {
  readonly index: number;
  readonly id?: string;
  readonly type?: 'function';
  readonly function?: { readonly name?: string; readonly arguments?: string };
}

/**
 * A reply's tool calls gathered from their streamed pieces, as OpenAI's clients gather them: a
 * piece's id, type or name is the call's, its arguments add to the call's.
 */
export class ToolCalls {
  private readonly byIndex = new Map<number, { id: string; name: string; arguments: string }>();

  add(pieces: readonly ToolCallDelta[]): void {
    for (const p of pieces) {
      let call = this.byIndex.get(p.index);
      if (call === undefined)
        this.byIndex.set(p.index, (call = { id: '', name: '', arguments: '' }));
      if (p.id) call.id = p.id;
      if (p.function?.name) call.name = p.function.name;
      if (p.function?.arguments) call.arguments += p.function.arguments;
    }
  }

  /** The calls in the order of their index; none: undefined. */
  whole(): ToolCall[] | undefined {
    if (this.byIndex.size === 0) return undefined;
    return [...this.byIndex]
      .sort(([a], [b]) => a - b)
      .map(([, c]) => ({
        id: c.id,
        type: 'function' as const,
        function: { name: c.name, arguments: c.arguments },
      }));
  }
}

/**
 * A reply's log probabilities gathered from its tokens': each list (chat's `content`, a
 * completion's `tokens`, `token_logprobs`, `top_logprobs`, `text_offset`) joined in order.
 */
export class Logprobs {
  private readonly lists = new Map<string, unknown[]>();

  add(scored: object): void {
    for (const [key, value] of Object.entries(scored)) {
      if (!Array.isArray(value)) continue;
      const list = this.lists.get(key);
      if (list === undefined) this.lists.set(key, [...value]);
      else for (const v of value) list.push(v);
    }
  }

  /** The whole reply's; none asked for (or given): null, as OpenAI writes it. */
  whole(): Record<string, unknown[]> | null {
    return this.lists.size === 0 ? null : Object.fromEntries(this.lists);
  }
}

export interface ChatDelta {
  readonly role?: 'assistant';
  readonly content?: string;
  /** A reasoning model's thinking, as vLLM's parsers stream it (older: reasoning_content). */
  readonly reasoning?: string;
  readonly reasoning_content?: string;
  readonly tool_calls?: readonly ToolCallDelta[];
}

/**
 * `logprobs`: the token's log probabilities, when asked for (a server's, passed on); `index`:
 * the choice it belongs to (a request for `n` of them).
 */
export function chatChunk(
  head: ChunkHead,
  delta: ChatDelta,
  finishReason: FinishReason | null,
  logprobs: object | null = null,
  index = 0,
  used: ChunkUsage | null = null,
) {
  return {
    id: head.id,
    object: 'chat.completion.chunk' as const,
    created: head.created,
    model: head.model,
    ...tierOf(head),
    choices: [{ index, delta, logprobs, finish_reason: finishReason }],
    ...(head.includeUsage ? { usage: used } : {}),
  };
}

export function textChunk(
  head: ChunkHead,
  text: string,
  finishReason: FinishReason | null,
  logprobs: object | null = null,
  index = 0,
  used: ChunkUsage | null = null,
) {
  return {
    id: head.id,
    object: 'text_completion' as const,
    created: head.created,
    model: head.model,
    ...tierOf(head),
    choices: [{ index, text, logprobs, finish_reason: finishReason }],
    ...(head.includeUsage ? { usage: used } : {}),
  };
}

/** The last chunk before [DONE] when usage was requested: no choices, the whole usage. */
export function usageChunk(
  object: 'chat.completion.chunk' | 'text_completion',
  head: ChunkHead,
  usage: Usage,
) {
  const { id, created, model } = head;
  return { id, object, created, model, ...tierOf(head), choices: [], usage };
}

/** An answer's `service_tier`, where its request named a tier: nothing where it did not. */
export function tierOf(head: { readonly serviceTier?: string }): { service_tier?: string } {
  return head.serviceTier === undefined ? {} : { service_tier: head.serviceTier };
}

/** One SSE event carrying `payload` as JSON. */
export function sseData(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

export const SSE_DONE = 'data: [DONE]\n\n';

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
};
