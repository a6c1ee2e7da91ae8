/**
 * An upstream's streamed chunk as the gateway reads it (OpenAI's chunk, vLLM's error event and
 * `goodput engine`'s TTFT timings), and what is taken from it: whether it can be forwarded as it
 * is, its TTFT parts, and its token counts, checked (a backend's figures are not trusted).
 */
import type { TtftParts } from '../core/observe/request-outcome.ts';
import type { ToolCallDelta } from '../openai/index.ts';
import type { ApiKind, TokenEvent } from './backend.ts';

export interface UpstreamChunk {
  readonly id?: string;
  readonly created?: number;
  readonly model?: string;
  /** The tier a server says it served in: the gateway's says it where the client named one. */
  readonly service_tier?: unknown;
  /** An error event's: vLLM's `ErrorResponse` (`object: "error"`), or OpenAI's `error`. */
  readonly object?: string;
  readonly error?: unknown;
  readonly choices?: ReadonlyArray<UpstreamChoice>;
  readonly usage?: {
    readonly prompt_tokens?: number;
    readonly completion_tokens?: number;
    readonly prompt_tokens_details?: { readonly cached_tokens?: number } | null;
  } | null;
  /** `goodput engine`'s extension to the usage chunk: its part of TTFT. */
  readonly timings?: { queue_ms?: number; prefill_ms?: number; first_decode_ms?: number };
}

/** One choice of a chunk: its index (of a request for several), its token, its finish. */
export interface UpstreamChoice {
  readonly index?: number;
  readonly delta?: {
    readonly content?: string;
    readonly reasoning?: string;
    readonly reasoning_content?: string;
    readonly tool_calls?: unknown;
  };
  readonly text?: string;
  readonly logprobs?: unknown;
  readonly finish_reason?: string | null;
}

export function ttftParts(t: UpstreamChunk['timings']): TtftParts | undefined {
  if (t?.queue_ms === undefined || t.prefill_ms === undefined || t.first_decode_ms === undefined)
    return undefined;
  return { queueMs: t.queue_ms, prefillMs: t.prefill_ms, firstDecodeMs: t.first_decode_ms };
}

/** An error told in the stream (vLLM writes one as an event, `object: "error"`). */
export function isErrorEvent(chunk: UpstreamChunk): boolean {
  return chunk.error != null || chunk.object === 'error';
}

/**
 * The token a chunk carries, if any: a completion's text; a chat's content, its reasoning, named
 * by the field it came in (the gateway writes it back under that name), and pieces of tool
 * calls; and the token's log probabilities, when asked for. The chunk where thinking ends may
 * carry the last of it beside the first of the reply; a tool parser's last chunk may carry the
 * end of a call's arguments beside the finish.
 */
export function chunkToken(chunk: UpstreamChunk, kind: ApiKind): TokenEvent | undefined {
  const choice = chunk.choices?.[0];
  return choice === undefined ? undefined : choiceToken(choice, kind);
}

/**
 * A chunk of a request for several choices: each choice it carries, its token tagged with its
 * index, then its finish when it ends there, handed to `on` in that order.
 */
export function eachChoice(chunk: UpstreamChunk, kind: ApiKind, on: (t: TokenEvent) => void): void {
  for (const c of chunk.choices ?? []) {
    const choice = c.index ?? 0;
    if (!Number.isSafeInteger(choice) || choice < 0)
      throw new Error(`a choice whose index is not one: ${JSON.stringify(c.index)}`);
    const t = choiceToken(c, kind);
    if (t !== undefined) on(choice === 0 ? t : { ...t, choice });
    if (c.finish_reason) on({ text: '', choice, finish: { reason: c.finish_reason } });
  }
}

function choiceToken(choice: UpstreamChoice, kind: ApiKind): TokenEvent | undefined {
  const logprobs = logprobsOf(choice.logprobs);
  const scored = logprobs === undefined ? {} : { logprobs };
  if (kind !== 'chat') {
    if (!choice.text) return logprobs === undefined ? undefined : { text: '', logprobs };
    return { text: choice.text, ...scored };
  }
  const delta = choice.delta ?? {};
  const text = delta.content ?? '';
  const field = delta.reasoning
    ? 'reasoning'
    : delta.reasoning_content
      ? 'reasoning_content'
      : null;
  const calls = toolCallDeltas(delta.tool_calls);
  if (field === null && calls === undefined && logprobs === undefined)
    return text === '' ? undefined : { text };
  return {
    text,
    ...(field === null ? {} : { reasoning: { field, text: delta[field] as string } }),
    ...(calls === undefined ? {} : { toolCalls: calls }),
    ...scored,
  };
}

/**
 * A choice's log probabilities, passed on as they came: an object with a token's entries in its
 * lists. One whose lists are all empty or null (`{"content": null}`, as some servers write on
 * every chunk) scores no token: none.
 */
function logprobsOf(v: unknown): object | undefined {
  if (v == null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v))
    throw new Error(`logprobs is not an object: ${JSON.stringify(v).slice(0, 100)}`);
  for (const list of Object.values(v)) if (Array.isArray(list) && list.length > 0) return v;
  return undefined;
}

/**
 * A delta's tool-call pieces, as the gateway relays them: the fields OpenAI's shape has, of
 * their types, each piece with its call's index (without it no client could tell which call it
 * adds to: the stream is broken). None, or an empty list: undefined.
 */
function toolCallDeltas(v: unknown): readonly ToolCallDelta[] | undefined {
  if (v == null || (Array.isArray(v) && v.length === 0)) return undefined;
  if (!Array.isArray(v)) throw new Error(`tool_calls is not a list: ${String(v).slice(0, 100)}`);
  return v.map((piece: { index?: unknown; id?: unknown; type?: unknown; function?: unknown }) => {
    const index = piece?.index;
    if (!Number.isSafeInteger(index) || (index as number) < 0)
      throw new Error(`a tool call without its index: ${JSON.stringify(piece).slice(0, 100)}`);
    const f = piece.function as { name?: unknown; arguments?: unknown } | null | undefined;
    return {
      index: index as number,
      ...(typeof piece.id === 'string' ? { id: piece.id } : {}),
      ...(piece.type === 'function' ? { type: 'function' as const } : {}),
      ...(f == null
        ? {}
        : {
            function: {
              ...(typeof f.name === 'string' ? { name: f.name } : {}),
              ...(typeof f.arguments === 'string' ? { arguments: f.arguments } : {}),
            },
          }),
    };
  });
}

/**
 * Whether the upstream's own event is the one the gateway would write — one token, no finish or
 * usage, named with the gateway's response id (it sends `X-Request-Id`) and the model the client
 * asked for — so it is forwarded byte for byte instead of rebuilt.
 */
export function asIs(
  chunk: UpstreamChunk,
  as: { readonly id: string; readonly model: unknown },
): boolean {
  return (
    chunk.id === as.id &&
    chunk.model === as.model &&
    chunk.choices?.length === 1 &&
    !chunk.choices[0].finish_reason &&
    !chunk.usage
  );
}

/** A token count the backend reported, if it is one: a whole number, 0 or more. */
/**
 * The prompt's size as the backend counted it (0 when it did not), and its tokens served from
 * the prefix cache when the backend says.
 */
export function promptUsage(usage: UpstreamChunk['usage']): {
  readonly promptTokens: number;
  readonly cachedTokens?: number;
} {
  const cached = counted(usage?.prompt_tokens_details?.cached_tokens);
  const promptTokens = counted(usage?.prompt_tokens) ?? 0;
  return cached === undefined ? { promptTokens } : { promptTokens, cachedTokens: cached };
}

export function counted(n: unknown): number | undefined {
  return Number.isSafeInteger(n) && (n as number) >= 0 ? (n as number) : undefined;
}

/**
 * A chunk forwarded as it is, as the client is to get it: without the `"usage": null` the
 * gateway asks every backend for (to count tokens) when the client asked for no usage, as
 * OpenAI and vLLM leave it out then; naming the tier it was served in (`serviceTier`) where the
 * client named one, as OpenAI's chunks do.
 */
export function forwardedData(
  chunk: UpstreamChunk,
  data: string,
  withUsage: boolean,
  serviceTier?: string,
): string {
  const unasked = !withUsage && Object.hasOwn(chunk, 'usage');
  if (!unasked && serviceTier === undefined) return data;
  const { id, object, created, model, service_tier: theirs, ...rest } = chunk;
  const usage = unasked ? undefined : chunk.usage;
  const service_tier = serviceTier ?? theirs;
  return JSON.stringify({ id, object, created, model, service_tier, ...rest, usage });
}

/** An event's data as the SSE frame it came in. */
export const frame = (data: string): Uint8Array => Buffer.from(`data: ${data}\n\n`);
