/**
 * An upstream's streamed chunk as the gateway reads it (OpenAI's chunk, vLLM's error event and
 * `goodput engine`'s TTFT timings), and what is taken from it: whether it can be forwarded as it
 * is, its TTFT parts, and its token counts, checked (a backend's figures are not trusted).
 */
import type { TtftParts } from '../core/observe/request-outcome.ts';
import type { ApiKind, ReasoningField } from './backend.ts';

export interface UpstreamChunk {
  readonly id?: string;
  readonly model?: string;
  /** An error event's: vLLM's `ErrorResponse` (`object: "error"`), or OpenAI's `error`. */
  readonly object?: string;
  readonly error?: unknown;
  readonly choices?: ReadonlyArray<{
    readonly delta?: {
      readonly content?: string;
      readonly reasoning?: string;
      readonly reasoning_content?: string;
    };
    readonly text?: string;
    readonly finish_reason?: string | null;
  }>;
  readonly usage?: { readonly prompt_tokens?: number; readonly completion_tokens?: number } | null;
  /** `goodput engine`'s extension to the usage chunk: its part of TTFT. */
  readonly timings?: { queue_ms?: number; prefill_ms?: number; first_decode_ms?: number };
}

export function ttftParts(t: UpstreamChunk['timings']): TtftParts | undefined {
  if (t?.queue_ms === undefined || t.prefill_ms === undefined || t.first_decode_ms === undefined)
    return undefined;
  return { queueMs: t.queue_ms, prefillMs: t.prefill_ms, firstDecodeMs: t.first_decode_ms };
}

/**
 * The token a chunk carries, if any: a chat's content, or else its reasoning (named by the field
 * it came in: the gateway writes it back under that name); a completion's text.
 */
export function chunkToken(
  chunk: UpstreamChunk,
  kind: ApiKind,
): { readonly text: string; readonly reasoning?: ReasoningField } | undefined {
  const choice = chunk.choices?.[0];
  if (kind !== 'chat') return choice?.text ? { text: choice.text } : undefined;
  const delta = choice?.delta;
  if (delta === undefined) return undefined;
  if (delta.content) return { text: delta.content };
  if (delta.reasoning) return { text: delta.reasoning, reasoning: 'reasoning' };
  if (delta.reasoning_content) {
    return { text: delta.reasoning_content, reasoning: 'reasoning_content' };
  }
  return undefined;
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
export function counted(n: unknown): number | undefined {
  return Number.isSafeInteger(n) && (n as number) >= 0 ? (n as number) : undefined;
}

/**
 * A chunk forwarded as it is, as the client is to get it: without the `"usage": null` the
 * gateway asks every backend for (to count tokens) when the client asked for no usage, as
 * OpenAI and vLLM leave it out then.
 */
export function forwardedData(chunk: UpstreamChunk, data: string, withUsage: boolean): string {
  return withUsage || !Object.hasOwn(chunk, 'usage')
    ? data
    : JSON.stringify({ ...chunk, usage: undefined });
}

/** An event's data as the SSE frame it came in. */
export const frame = (data: string): Uint8Array => Buffer.from(`data: ${data}\n\n`);
