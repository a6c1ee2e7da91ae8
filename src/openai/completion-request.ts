/**
 * `POST /v1/completions` request body (the legacy text completion). The prompt takes the four
 * forms vLLM accepts: a string, an array of strings, an array of token ids, or an array of
 * token-id arrays; each array form is a batch of prompts, one choice each, except a flat array
 * of token ids, which is one prompt. The request is strict: an unknown field is a 400. Main
 * rule: parse with `parseCompletionRequest`, which throws a 400 naming the bad field and value,
 * and read prompts through `promptList`.
 */
import { z } from 'zod';
import { MAX_TOKEN_ID } from './prompt-tokens.ts';
import { checkCommonRules, commonFields } from './request-fields.ts';
import { expect, parseWith, text } from './validation.ts';

/** One prompt: its text, or its token ids (never empty). */
export type CompletionPrompt = string | readonly number[];

const tokenId = z
  .int(expect(`a token id (an integer in [0, ${MAX_TOKEN_ID}])`))
  .min(0)
  .max(MAX_TOKEN_ID);
const tokenIds = z.array(tokenId, expect('a non-empty array of token ids')).min(1);

export const completionRequestSchema = z
  .strictObject(
    {
      ...commonFields,
      prompt: z.union(
        [text('a string'), z.array(text('a string')).min(1), tokenIds, z.array(tokenIds).min(1)],
        expect('a string, or a non-empty array of strings, of token ids or of token-id arrays'),
      ),
    },
    expect('a JSON object'),
  )
  .check(checkCommonRules);

export type CompletionRequest = z.output<typeof completionRequestSchema>;

export function parseCompletionRequest(body: unknown): CompletionRequest {
  return parseWith(completionRequestSchema, body);
}

/** The prompts of a request, one per choice OpenAI would return. */
export function promptList(req: Pick<CompletionRequest, 'prompt'>): readonly CompletionPrompt[] {
  const p = req.prompt;
  return typeof p === 'string' || isTokenIds(p) ? [p] : p;
}

function isTokenIds(p: readonly unknown[]): p is readonly number[] {
  return typeof p[0] === 'number';
}
