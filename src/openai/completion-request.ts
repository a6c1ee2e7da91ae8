/**
 * `POST /v1/completions` request body (the legacy text completion). The prompt takes the four
 * forms vLLM accepts: a string, an array of strings, an array of token ids, or an array of
 * token-id arrays; each array form is a batch of prompts, one choice each, except a flat array
 * of token ids, which is one prompt. The request is strict: an unknown field is a 400. Main
 * rule: parse with `parseCompletionRequest`, which throws a 400 naming the bad field and value,
 * and read prompts through `promptList`.
 */
import { z } from 'zod';
import { checkCommonRules, commonFields, isTokenId, tokenIds } from './request-fields.ts';
import { chatFieldsOnCompletions } from './unsupported-fields.ts';
import { checkConstraints } from './constraint-fields.ts';
import { invalidRequest } from './errors.ts';
import { byForm, expect, flag, isText, listOf, parseWith, text } from './validation.ts';

/** One prompt: its text, or its token ids (never empty). */
export type CompletionPrompt = string | readonly number[];

const isTokenIds = (v: unknown): v is number[] =>
  Array.isArray(v) && v.length > 0 && v.every(isTokenId);

/** The prompt's form, by its shape: a string, or an array of strings, ids or id arrays. */
const PROMPT_FORMS = {
  text: text('a string'),
  texts: listOf(isText, text('a string'), 'a non-empty array of strings', 1),
  ids: tokenIds,
  batches: listOf(isTokenIds, tokenIds, 'a non-empty array of token-id arrays', 1),
};

function promptForm(v: unknown): z.ZodType<string | string[] | number[] | number[][]> | undefined {
  if (typeof v === 'string') return PROMPT_FORMS.text;
  if (!Array.isArray(v) || v.length === 0) return undefined;
  const first: unknown = v[0];
  if (typeof first === 'string') return PROMPT_FORMS.texts;
  if (typeof first === 'number') return PROMPT_FORMS.ids;
  return Array.isArray(first) ? PROMPT_FORMS.batches : undefined;
}

const LOGPROBS_FORMS = {
  none: z.literal(false, expect('an integer ≥ -1, or false')),
  count: z.int(expect('an integer ≥ -1')).min(-1),
};
const logprobsForm = (v: unknown): z.ZodType<number | false> | undefined =>
  typeof v === 'boolean'
    ? LOGPROBS_FORMS.none
    : typeof v === 'number'
      ? LOGPROBS_FORMS.count
      : undefined;

export const completionRequestSchema = z
  .strictObject(
    {
      ...commonFields,
      ...chatFieldsOnCompletions,
      /**
       * The log probabilities of the sampled token and of this many likeliest at each step (vLLM:
       * -1, all of them); false: none.
       */
      logprobs: byForm(logprobsForm, 'an integer ≥ -1, or false').nullish(),
      /**
       * The prompt before the reply, in its text and, with `logprobs`, its tokens' (what an
       * evaluation harness scores a continuation by: lm-evaluation-harness's loglikelihood).
       */
      echo: flag(),
      prompt: byForm(
        promptForm,
        'a string, or a non-empty array of strings, of token ids or of token-id arrays',
      ),
    },
    expect('a JSON object'),
  )
  .check(checkCommonRules)
  .check(checkConstraints);

export type CompletionRequest = z.output<typeof completionRequestSchema>;

export function parseCompletionRequest(body: unknown): CompletionRequest {
  return parseWith(completionRequestSchema, body);
}

/** The prompts of a request, one per choice OpenAI would return. */
export function promptList(req: Pick<CompletionRequest, 'prompt'>): readonly CompletionPrompt[] {
  const p = req.prompt;
  return typeof p === 'string' || isFlat(p) ? [p] : p;
}

/**
 * The text a filler server's reply starts with when `echo` is asked: the prompt as sent.
 * A prompt of token ids, or one cut by `truncate_prompt_tokens`, is a 400 naming `echo`:
 * filler has no tokenizer to turn ids, or the tokens kept, back into text.
 */
export function fillerEcho(
  req: Pick<CompletionRequest, 'prompt' | 'echo' | 'truncate_prompt_tokens'>,
  server: string,
): string | undefined {
  if (req.echo !== true) return undefined;
  const prompt = promptList(req)[0];
  const refused = (why: string) =>
    invalidRequest(
      `echo: not supported by ${server} ${why} (expected false or absent), got true`,
      'echo',
    );
  if (typeof prompt !== 'string')
    throw refused('for a prompt of token ids, which it cannot detokenize');
  if (req.truncate_prompt_tokens != null)
    throw refused('beside truncate_prompt_tokens, whose tokens kept it cannot tell');
  return prompt;
}

function isFlat(p: readonly unknown[]): p is readonly number[] {
  return typeof p[0] === 'number';
}
