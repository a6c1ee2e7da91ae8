/**
 * `POST /v1/chat/completions` request body. Content is a string or a non-empty array of text
 * parts, and on a user's message images (image-parts.ts; audio and files are not modelled);
 * only an assistant message may carry none, or calls of tools (tool-fields.ts), and a tool
 * message names the call it answers (`tool_call_id`), as OpenAI requires. Messages are strict
 * like the request: an unknown field is a 400 (`messages[0].foo: unknown field`), and the other
 * fields a response's message carries back (`refusal: null`) pass only with their neutral
 * values. Main rule: parse with `parseChatCompletionRequest`, which throws a 400 naming the bad
 * field and value.
 */
import { z } from 'zod';
import { REASONING_EFFORTS, type ReasoningEffort } from '../core/request/request.ts';
import { checkCommonRules, commonFields, maxTokens, promptCacheKey } from './request-fields.ts';
import { unsupportedMessageFields } from './unsupported-fields.ts';
import { checkToolRules, toolCalls, toolFields } from './tool-fields.ts';
import { checkConstraints } from './constraint-fields.ts';
import {
  firstImage,
  imagePart,
  isImagePart,
  tooManyImages,
  type ImagePart,
} from './image-parts.ts';
import {
  byForm,
  expect,
  flag,
  isObject,
  isText,
  jsonObject,
  judgedList,
  parseWith,
  refuseLongList,
  text,
  type Wording,
} from './validation.ts';

/**
 * The most messages a request may carry, as OpenAI's API allows. Checked before the schema: a
 * body of 100,000 bad messages would otherwise cost seconds of validation to refuse.
 */
export const MAX_MESSAGES = 2_048;

/** OpenAI's roles; `developer` is what its current API and SDKs send in place of `system`. */
export const CHAT_ROLES = ['system', 'developer', 'user', 'assistant', 'tool'] as const;
export type ChatRole = (typeof CHAT_ROLES)[number];

export interface TextPart {
  readonly type: 'text';
  readonly text: string;
}
export type ContentPart = TextPart | ImagePart;

/** `{"type": "text", "text": …}` and nothing else, its text well-formed: most parts. */
const isTextPart = (v: unknown): boolean =>
  isObject(v) && v.type === 'text' && isText(v.text) && Object.keys(v).length === 2;
const PART = 'a text part ({"type": "text", "text": "…"}) or an image ({"type": "image_url", …})';
const PART_FORMS = {
  text: z.strictObject({ type: z.literal('text'), text: text('a string') }),
  image_url: imagePart,
  other: z.looseObject({ type: z.enum(['text', 'image_url'], expect('"text" or "image_url"')) }),
};
const contentPart = byForm((v) => {
  if (!isObject(v)) return undefined;
  return (PART_FORMS as Record<string, z.ZodType>)[v.type as string] ?? PART_FORMS.other;
}, PART) as z.ZodType<ContentPart>;

const CONTENT = 'a string or a non-empty array of content parts';
const CONTENT_FORMS = {
  text: text('a string'),
  parts: judgedList(contentPart, CONTENT, 1, (v) => isTextPart(v) || isImagePart(v)),
};
const contentForm = (v: unknown): z.ZodType<string | ContentPart[]> | undefined =>
  typeof v === 'string' ? CONTENT_FORMS.text : Array.isArray(v) ? CONTENT_FORMS.parts : undefined;

export const chatMessageSchema = z
  .strictObject(
    {
      role: z.enum(CHAT_ROLES, expect(`one of ${CHAT_ROLES.join(', ')}`)),
      content: byForm(contentForm, CONTENT).nullish(),
      name: text('a string').nullish(),
      /** On a tool message: the call it answers. */
      tool_call_id: text('a string').nullish(),
      /** On an assistant message: the calls it made. */
      tool_calls: toolCalls.nullish(),
      ...unsupportedMessageFields,
    },
    expect('a message object'),
  )
  .check((ctx) => {
    // As OpenAI requires: only an assistant's message (one that called tools) may have no
    // content, or calls, and a tool's message names the call it answers.
    const m = ctx.value;
    if (m.tool_calls != null && m.tool_calls.length > 0 && m.role !== 'assistant') {
      const message = `absent on a ${m.role} message (only an assistant calls tools)`;
      ctx.issues.push({ code: 'custom', path: ['tool_calls'], input: m.tool_calls, message });
    }
    if (m.content == null && m.role !== 'assistant') {
      const message = `${CONTENT} on a ${m.role} message`;
      ctx.issues.push({ code: 'custom', path: ['content'], input: m.content, message });
    }
    const at = m.role === 'user' ? -1 : firstImage(m.content);
    if (at >= 0) {
      const message = `text on a ${m.role} message (an image is a user's, as OpenAI takes it)`;
      ctx.issues.push({
        code: 'custom',
        path: ['content', at, 'type'],
        input: 'image_url',
        message,
      });
    }
    if (m.role === 'tool' && m.tool_call_id == null) {
      const message = 'a string on a tool message (the id of the call it answers)';
      ctx.issues.push({ code: 'custom', path: ['tool_call_id'], input: m.tool_call_id, message });
    }
  });

export const chatCompletionRequestSchema = z
  .strictObject(
    {
      ...commonFields,
      messages: z
        .array(chatMessageSchema, expect('a non-empty array of messages'))
        .min(1)
        .max(MAX_MESSAGES),
      max_completion_tokens: maxTokens,
      ...toolFields,
      /** The sampled token's log probability at each step, and `top_logprobs` likeliest. */
      logprobs: flag(),
      /** vLLM: -1, every token of the vocabulary; with logprobs only. */
      top_logprobs: z.int(expect('an integer ≥ -1')).min(-1).nullish(),
      // vLLM's chat template knobs, as it takes them.
      add_generation_prompt: flag(),
      /** The reply continues the last message (an assistant's prefill) instead of starting one. */
      continue_final_message: flag(),
      /** Passed to the chat template (`{"enable_thinking": false}`). */
      chat_template_kwargs: jsonObject('an object').nullish(),
      /**
       * How much a reasoning model thinks, as vLLM takes it: passed to the chat template, which
       * a model that does not reason ignores (as the simulated engines' do).
       */
      reasoning_effort: z.enum(REASONING_EFFORTS, expect('one of low, medium, high')).nullish(),
      /** vLLM's: whether the reply carries the model's reasoning (true when absent). */
      include_reasoning: flag(),
      prompt_cache_key: promptCacheKey,
    },
    expect('a JSON object'),
  )
  .check(checkCommonRules)
  .check(checkToolRules)
  .check(checkConstraints)
  .check((ctx) => {
    const req = ctx.value;
    const images = tooManyImages(req.messages, 'messages');
    if (images !== undefined) ctx.issues.push(images);
    // As vLLM refuses: the likeliest tokens are asked for only with the sampled one's.
    if (req.top_logprobs != null && req.top_logprobs !== 0 && req.logprobs !== true) {
      ctx.issues.push({
        code: 'custom',
        path: ['top_logprobs'],
        input: req.top_logprobs,
        message: 'only allowed when logprobs is true',
        params: { plain: true, got: null } satisfies Wording,
      });
    }
    // As vLLM refuses both set true: a reply cannot start anew and continue the last message.
    if (req.continue_final_message === true && req.add_generation_prompt === true) {
      ctx.issues.push({
        code: 'custom',
        path: ['continue_final_message'],
        input: true,
        message: 'not true together with add_generation_prompt: true',
        params: { plain: true, got: null } satisfies Wording,
      });
    }
  });

/**
 * The reasoning effort a request asks for: chat's `reasoning_effort`, or the one its chat template
 * is given (the Responses API's `reasoning.effort` goes there); undefined for none of vLLM's.
 */
export function reasoningEffortOf(req: {
  readonly reasoning_effort?: ReasoningEffort | null;
  readonly chat_template_kwargs?: Readonly<Record<string, unknown>> | null;
}): ReasoningEffort | undefined {
  const effort = req.reasoning_effort ?? req.chat_template_kwargs?.reasoning_effort;
  return REASONING_EFFORTS.find((e) => e === effort);
}

export type ChatMessage = z.output<typeof chatMessageSchema>;
export type ChatCompletionRequest = z.output<typeof chatCompletionRequestSchema>;

export function parseChatCompletionRequest(body: unknown): ChatCompletionRequest {
  refuseLongList(body, 'messages', MAX_MESSAGES, 'messages');
  return parseWith(chatCompletionRequestSchema, body);
}
