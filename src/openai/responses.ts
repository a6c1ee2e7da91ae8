/**
 * Whole (non-streamed) response bodies: `chat.completion`, `text_completion`, and the model
 * list of `GET /v1/models`. Main rule: usage is always present on a whole response and
 * total_tokens is prompt + completion, as OpenAI's is.
 */
import type { ToolCall } from './tool-fields.ts';
import { tierOf } from './chunks.ts';

/**
 * `stop`: the model ended on its own (or on a stop string); `length`: it hit the output limit;
 * `tool_calls`: it ended by calling tools.
 */
export type FinishReason = 'stop' | 'length' | 'tool_calls';

export interface Usage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  /** The prompt's tokens served from the prefix cache, when the server knows them. */
  readonly prompt_tokens_details?: { readonly cached_tokens: number };
}

export function usage(
  promptTokens: number,
  completionTokens: number,
  cachedTokens?: number,
): Usage {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    ...(cachedTokens === undefined
      ? {}
      : { prompt_tokens_details: { cached_tokens: cachedTokens } }),
  };
}

/** The APIs a Goodput server answers: chat and text completions, and the Responses API. */
export type AnswerApi = 'chat' | 'completion' | 'responses';

const ANSWER_ID_PREFIX: Readonly<Record<AnswerApi, string>> = {
  chat: 'chatcmpl-',
  completion: 'cmpl-',
  responses: 'resp_',
};

/** The id of the answer to request `requestId`, prefixed as OpenAI's APIs prefix it. */
export function answerId(api: AnswerApi, requestId: string): string {
  return ANSWER_ID_PREFIX[api] + requestId;
}

export interface ResponseHead {
  readonly id: string;
  /** Unix seconds. */
  readonly created: number;
  readonly model: string;
  /** The tier it was served in, when its request named one (`servedTier`). */
  readonly serviceTier?: string;
}

/** What a chat's reply holds besides its content. */
export interface ReplyExtras {
  /** A reasoning model's thinking, and the field its backend streamed it in. */
  readonly reasoning?: { readonly field: 'reasoning' | 'reasoning_content'; readonly text: string };
  readonly toolCalls?: readonly ToolCall[];
  /** Its tokens' log probabilities, when asked for. */
  readonly logprobs?: object | null;
}

/**
 * A whole chat completion; a reasoning model's thinking goes beside the content under the field
 * its backend streamed it in (vLLM: `reasoning`, older `reasoning_content`); the calls a reply
 * made under `tool_calls`, its content null when it said nothing else, as OpenAI's is.
 */
export function chatCompletion(
  head: ResponseHead,
  content: string,
  finishReason: FinishReason,
  used: Usage,
  extras: ReplyExtras = {},
) {
  return chatCompletionOf(head, [chatChoice(0, content, finishReason, extras)], used);
}

/** A whole chat completion of several choices (`n`), each made by `chatChoice`. */
export function chatCompletionOf(
  head: ResponseHead,
  choices: readonly ReturnType<typeof chatChoice>[],
  used: Usage,
) {
  return {
    id: head.id,
    object: 'chat.completion' as const,
    created: head.created,
    model: head.model,
    ...tierOf(head),
    choices,
    usage: used,
  };
}

/** One choice of a whole chat completion: the reply at `index`. */
export function chatChoice(
  index: number,
  content: string,
  finishReason: FinishReason,
  { reasoning, toolCalls, logprobs = null }: ReplyExtras = {},
) {
  const calls = toolCalls !== undefined && toolCalls.length > 0 ? toolCalls : undefined;
  return {
    index,
    message: {
      role: 'assistant' as const,
      content: calls !== undefined && content === '' ? null : content,
      ...(reasoning === undefined ? {} : { [reasoning.field]: reasoning.text }),
      ...(calls === undefined ? {} : { tool_calls: calls }),
    },
    logprobs,
    finish_reason: finishReason,
  };
}

export function textCompletion(
  head: ResponseHead,
  text: string,
  finishReason: FinishReason,
  used: Usage,
  logprobs: object | null = null,
) {
  return textCompletionOf(head, [textChoice(0, text, finishReason, logprobs)], used);
}

/** A whole text completion of several choices (`n`), each made by `textChoice`. */
export function textCompletionOf(
  head: ResponseHead,
  choices: readonly ReturnType<typeof textChoice>[],
  used: Usage,
) {
  return {
    id: head.id,
    object: 'text_completion' as const,
    created: head.created,
    model: head.model,
    ...tierOf(head),
    choices,
    usage: used,
  };
}

/** One choice of a whole text completion: the text at `index`. */
export function textChoice(
  index: number,
  text: string,
  finishReason: FinishReason,
  logprobs: object | null = null,
) {
  return { index, text, logprobs, finish_reason: finishReason };
}

export interface ModelCard {
  readonly id: string;
  readonly created: number;
  readonly ownedBy: string;
  /** vLLM's extras: the model behind a served name, and its context length. */
  readonly root?: string;
  /** vLLM's: a LoRA adapter's base model; null on a base model (vLLM writes it). */
  readonly parent?: string | null;
  readonly maxModelLen?: number;
}

export function modelList(models: readonly ModelCard[]) {
  return {
    object: 'list' as const,
    data: models.map((m) => ({
      id: m.id,
      object: 'model' as const,
      created: m.created,
      owned_by: m.ownedBy,
      ...(m.root === undefined ? {} : { root: m.root }),
      ...(m.parent === undefined ? {} : { parent: m.parent }),
      ...(m.maxModelLen === undefined ? {} : { max_model_len: m.maxModelLen }),
    })),
  };
}
