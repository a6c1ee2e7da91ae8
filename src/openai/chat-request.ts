/**
 * `POST /v1/chat/completions` request body. Content is a string or an array of text parts
 * (images and audio are not modelled); an assistant message may carry no content. Main rule:
 * parse with `parseChatCompletionRequest`, which throws a 400 naming the bad field and value.
 */
import { z } from 'zod';
import { commonFields, MAX_TOKENS_LIMIT } from './request-fields.ts';
import { expect, parseWith } from './validation.ts';

export const CHAT_ROLES = ['system', 'user', 'assistant', 'tool'] as const;
export type ChatRole = (typeof CHAT_ROLES)[number];

const textPart = z.object({ type: z.literal('text'), text: z.string() });

export const chatMessageSchema = z.object(
  {
    role: z.enum(CHAT_ROLES, expect(`one of ${CHAT_ROLES.join(', ')}`)),
    content: z
      .union([z.string(), z.array(textPart)], expect('a string or an array of text parts'))
      .nullish(),
    name: z.string(expect('a string')).nullish(),
  },
  expect('a message object'),
);

export const chatCompletionRequestSchema = z.object(
  {
    ...commonFields,
    messages: z.array(chatMessageSchema, expect('a non-empty array of messages')).min(1),
    max_completion_tokens: z
      .int(expect(`an integer in [1, ${MAX_TOKENS_LIMIT}]`))
      .min(1)
      .max(MAX_TOKENS_LIMIT)
      .nullish(),
  },
  expect('a JSON object'),
);

export type ChatMessage = z.output<typeof chatMessageSchema>;
export type ChatCompletionRequest = z.output<typeof chatCompletionRequestSchema>;

export function parseChatCompletionRequest(body: unknown): ChatCompletionRequest {
  return parseWith(chatCompletionRequestSchema, body);
}

/** A message's text: the string, or its text parts joined by newlines (as vLLM joins them). */
export function messageText(m: ChatMessage): string {
  const c = m.content;
  if (c == null) return '';
  if (typeof c === 'string') return c;
  return c.map((p) => p.text).join('\n');
}
