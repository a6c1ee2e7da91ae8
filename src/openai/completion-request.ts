/**
 * `POST /v1/completions` request body (the legacy text completion). The prompt is a string or
 * an array of strings; token-id prompts are not accepted (no tokenizer here). Main rule: parse
 * with `parseCompletionRequest`, which throws a 400 naming the bad field and value.
 */
import { z } from 'zod';
import { commonFields } from './request-fields.ts';
import { expect, parseWith } from './validation.ts';

export const completionRequestSchema = z.object(
  {
    ...commonFields,
    prompt: z.union(
      [z.string(), z.array(z.string()).min(1)],
      expect('a string or a non-empty array of strings'),
    ),
  },
  expect('a JSON object'),
);

export type CompletionRequest = z.output<typeof completionRequestSchema>;

export function parseCompletionRequest(body: unknown): CompletionRequest {
  return parseWith(completionRequestSchema, body);
}

/** The prompts of a request, one per choice OpenAI would return. */
export function promptList(req: CompletionRequest): readonly string[] {
  return typeof req.prompt === 'string' ? [req.prompt] : req.prompt;
}
