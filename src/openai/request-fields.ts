/**
 * The request fields chat and text completions share: the model, output limits, streaming and
 * the sampling knobs. Sampling knobs are accepted and range-checked, as OpenAI and vLLM do, so a
 * client that sends them is not refused; a server may ignore them. `null` counts as absent,
 * since several clients send explicit nulls. Unknown fields are dropped, as vLLM does.
 */
import { z } from 'zod';
import { expect } from './validation.ts';

/** The largest max_tokens the wire format accepts; a server checks it against its context too. */
export const MAX_TOKENS_LIMIT = 1_048_576;

const maxTokens = z
  .int(expect(`an integer in [1, ${MAX_TOKENS_LIMIT}]`))
  .min(1)
  .max(MAX_TOKENS_LIMIT)
  .nullish();

const unitNumber = (lo: number, hi: number) =>
  z
    .number(expect(`a number in [${lo}, ${hi}]`))
    .min(lo)
    .max(hi)
    .nullish();

export const commonFields = {
  model: z.string(expect('a model name')).min(1),
  max_tokens: maxTokens,
  stream: z.boolean(expect('a boolean')).nullish(),
  stream_options: z
    .object(
      {
        include_usage: z.boolean(expect('a boolean')).nullish(),
        continuous_usage_stats: z.boolean(expect('a boolean')).nullish(),
      },
      expect('an object'),
    )
    .nullish(),
  temperature: unitNumber(0, 2),
  top_p: unitNumber(0, 1),
  presence_penalty: unitNumber(-2, 2),
  frequency_penalty: unitNumber(-2, 2),
  n: z.literal(1, expect('1 (only one choice per request is supported)')).nullish(),
  stop: z
    .union([z.string(), z.array(z.string())], expect('a string or an array of strings'))
    .nullish(),
  seed: z.int(expect('an integer')).nullish(),
  user: z.string(expect('a string')).nullish(),
  /** vLLM's extension: generate exactly the output limit, never stopping at end-of-sequence. */
  ignore_eos: z.boolean(expect('a boolean')).nullish(),
};

interface OutputLimitFields {
  readonly max_tokens?: number | null;
  readonly max_completion_tokens?: number | null;
}

/** The output limit a request set, and under which field name (for error messages); none: undefined. */
export function outputLimit(
  req: OutputLimitFields,
): { readonly tokens: number; readonly field: string } | undefined {
  if (req.max_completion_tokens != null)
    return { tokens: req.max_completion_tokens, field: 'max_completion_tokens' };
  if (req.max_tokens != null) return { tokens: req.max_tokens, field: 'max_tokens' };
  return undefined;
}

/** Whether a streamed response must end with a usage chunk. */
export function includeUsage(req: {
  readonly stream_options?: { readonly include_usage?: boolean | null } | null;
}): boolean {
  return req.stream_options?.include_usage === true;
}
