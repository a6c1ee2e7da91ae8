/**
 * The request fields chat and text completions share: the model, output limits, streaming, the
 * sampling and decoding knobs (OpenAI's and vLLM's extensions), vLLM's cache salt and
 * truncation, the constraints on the reply's form (constraint-fields.ts), and the known fields
 * this server does not implement (unsupported-fields.ts). Sampling and decoding knobs are
 * accepted and range-checked with vLLM's rules, so a client that sends them is not refused; a
 * server may ignore them (a simulated engine's filler text has no special tokens to skip). What
 * changes a reply's form or content is different: a server whose replies are filler refuses it
 * (`fillerAnswerable`). `null` counts as absent, since several clients send explicit nulls.
 * Main rule: nothing is silently dropped —
 * the request objects are strict, so an unknown field is a 400 naming it (as OpenAI answers
 * "Unrecognized request argument supplied"), and what parses is exactly what the client sent
 * and the server accepted, safe to forward upstream.
 */
import { z } from 'zod';
import { MAX_CHOICES } from '../core/request/request.ts';
import { SERVICE_TIERS, type ServiceTier } from '../core/request/slo-classes.ts';
import { MAX_TOKEN_ID } from './prompt-tokens.ts';
import { describeValue, invalidRequest } from './errors.ts';
import { neutralOnly, unsupportedFields } from './unsupported-fields.ts';
import { constraintFields, unconstrainedOnly } from './constraint-fields.ts';
import { byForm, expect, flag, isText, listOf, text, type Wording } from './validation.ts';

/** The largest max_tokens the wire format accepts; a server checks it against its context too. */
export const MAX_TOKENS_LIMIT = 1_048_576;

export { MAX_CHOICES };

/** The choices a request asks for: its `n`, 1 when absent. */
export const choiceCount = (req: { readonly n?: number | null }): number => req.n ?? 1;

/** An output limit: max_tokens, or chat's max_completion_tokens. */
export const maxTokens = z
  .int(expect(`an integer in [1, ${MAX_TOKENS_LIMIT}]`))
  .min(1)
  .max(MAX_TOKENS_LIMIT)
  .nullish();

export const unitNumber = (lo: number, hi: number) =>
  z
    .number(expect(`a number in [${lo}, ${hi}]`))
    .min(lo)
    .max(hi)
    .nullish();

/** Nucleus sampling's mass: above 0 (vLLM and SGLang refuse 0, which keeps no token) to 1. */
export const topP = () => z.number(expect('a number in (0, 1]')).gt(0).max(1).nullish();

const TOKEN_ID = `a token id (an integer in [0, ${MAX_TOKEN_ID}])`;
const tokenId = z.int(expect(TOKEN_ID)).min(0).max(MAX_TOKEN_ID);
export const isTokenId = (v: unknown): v is number =>
  Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= MAX_TOKEN_ID;
/** A non-empty array of token ids: a prompt, or vLLM's allowed_token_ids. */
export const tokenIds = listOf(isTokenId, tokenId, 'a non-empty array of token ids', 1);

/** A token id as a JSON key: decimal digits, no leading zero. */
const TOKEN_KEY = /^(0|[1-9][0-9]{0,6})$/;
const BIAS = 'a number in [-100, 100]';
const bias = z.number(expect(BIAS)).min(-100).max(100);
const LOGIT_BIAS = `an object of token ids to biases (${TOKEN_ID} to ${BIAS})`;

/**
 * OpenAI's and vLLM's logit bias: a bias added to each token's logit before sampling, by token
 * id. The first bad key or value is named, not each (a body is up to megabytes of them).
 */
const logitBias = z
  .custom<Record<string, number>>(
    (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
    expect(LOGIT_BIAS),
  )
  .check((ctx) => {
    // Keys, not entries: a body of 300,000 biases took 180–240 ms to judge as pairs, ~40 as keys.
    const biases = ctx.value;
    for (const key of Object.keys(biases)) {
      const value = biases[key];
      if (!TOKEN_KEY.test(key) || Number(key) > MAX_TOKEN_ID) {
        const got = `the key ${describeValue(key)}`;
        const message = `keys that are token ids (integers in [0, ${MAX_TOKEN_ID}])`;
        ctx.issues.push({ code: 'custom', input: key, message, params: { got } });
        return;
      }
      if (typeof value === 'number' && value >= -100 && value <= 100) continue;
      const judged = bias.safeParse(value, { reportInput: true });
      for (const issue of judged.error?.issues ?? []) {
        ctx.issues.push({ ...issue, path: [key, ...issue.path] } as z.core.$ZodRawIssue);
      }
      return;
    }
  });

const STOP_FORMS = { text: text('a string'), texts: listOf(isText, text('a string'), 'strings') };
const stopForm = (v: unknown): z.ZodType<string | string[]> | undefined =>
  typeof v === 'string' ? STOP_FORMS.text : Array.isArray(v) ? STOP_FORMS.texts : undefined;

/**
 * The conversation whose cached prefix a request shares (OpenAI's `prompt_cache_key`, which
 * agents set to their conversation's id): the gateway's session, which routing keeps near its
 * cache; no backend reads it.
 */
export const promptCacheKey = text('a string of 1 to 255 characters').min(1).max(255).nullish();

/**
 * OpenAI's service tier: the gateway serves a request in the class its policy maps the tier to
 * (`service_tiers`), and refuses a tier it maps to none; a server takes any and ignores it.
 */
export const serviceTier = z
  .enum(SERVICE_TIERS, expect(`one of ${SERVICE_TIERS.join(', ')}`))
  .nullish();

/**
 * The tier a request that named `tier` was served in, as its answer says (OpenAI's answers
 * name one when the request did): `auto`'s is the default.
 */
export function servedTier(tier: ServiceTier): Exclude<ServiceTier, 'auto'> {
  return tier === 'auto' ? 'default' : tier;
}

export const commonFields = {
  model: text('a model name').min(1),
  max_tokens: maxTokens,
  stream: flag(),
  stream_options: z
    .strictObject(
      // vLLM's usage on every chunk too, with include_usage (continuousUsage).
      // OpenAI's padding of each chunk against length side channels: not done here.
      {
        include_usage: flag(),
        continuous_usage_stats: flag(),
        include_obfuscation: neutralOnly([false]),
      },
      expect('an object'),
    )
    .nullish(),
  // vLLM's bound, not OpenAI's 2: a server behind takes any temperature ≥ 0.
  temperature: z.number(expect('a number ≥ 0')).min(0).nullish(),
  top_p: topP(),
  presence_penalty: unitNumber(-2, 2),
  frequency_penalty: unitNumber(-2, 2),
  /** Choices sampled from the one prompt (parallel sampling). */
  n: z
    .int(expect(`an integer from 1 to ${MAX_CHOICES}`))
    .min(1)
    .max(MAX_CHOICES)
    .nullish(),
  stop: byForm(stopForm, 'a string or an array of strings').nullish(),
  logit_bias: logitBias.nullish(),
  seed: z.int(expect('an integer')).nullish(),
  user: text('a string').nullish(),
  // vLLM's: the id the engine names the request by, where no X-Request-Id header gives one.
  request_id: text('a string').nullish(),
  /** OpenAI's successor to `user`: who the end user is, for the client's own abuse tracing. */
  safety_identifier: text('a string').nullish(),
  // vLLM's extensions, with vLLM's rules.
  /** Generate exactly the output limit, never stopping at end-of-sequence. */
  ignore_eos: flag(),
  /** -1 or 0: all tokens. */
  top_k: z.int(expect('an integer ≥ -1')).min(-1).nullish(),
  min_p: unitNumber(0, 1),
  repetition_penalty: z.number(expect('a number > 0')).gt(0).nullish(),
  /** At most the output limit (checked by `checkCommonRules`). */
  min_tokens: z.int(expect('an integer ≥ 0')).min(0).nullish(),
  stop_token_ids: listOf(isTokenId, tokenId, 'an array of token ids').nullish(),
  include_stop_str_in_output: flag(),
  skip_special_tokens: flag(),
  spaces_between_special_tokens: flag(),
  /** Sampling only among these; vLLM refuses an empty list. */
  allowed_token_ids: tokenIds.nullish(),
  bad_words: listOf(isText, text('a string'), 'an array of strings').nullish(),
  /** BOS and the like on top of what the chat template adds (vLLM: off for chat, on for text). */
  add_special_tokens: flag(),
  /** Beam search's length penalty: vLLM takes it with or without beam search. */
  length_penalty: z.number(expect('a number')).nullish(),
  /**
   * Prompts share cached KV blocks only under the same salt (vLLM V1): a tenant's prompts are
   * not matched against another's. The prompt's block hashes start from it (prefix-hashes.ts).
   */
  cache_salt: text('a non-empty string').min(1).nullish(),
  /**
   * vLLM's left truncation: the prompt's last k tokens are read (-1: as many as the model's
   * context holds); at most the context (prompt-size.ts).
   */
  truncate_prompt_tokens: z
    .int(expect('an integer ≥ 1, or -1'))
    .min(-1)
    .refine((k) => k !== 0, { error: 'an integer ≥ 1, or -1' })
    .nullish(),
  /**
   * vLLM's request priority (lower is served first): an engine takes it only under priority
   * scheduling (`priorityAllowed`); the gateway sets it itself, from the request's class.
   */
  priority: z.int(expect('an integer')).nullish(),
  service_tier: serviceTier,
  ...constraintFields,
  ...unsupportedFields,
};

interface RuleFields extends OutputLimitFields {
  readonly stream?: boolean | null;
  readonly stream_options?: object | null;
  readonly min_tokens?: number | null;
}

/**
 * The rules that span fields, for `.check()` on a request schema (zod runs it once every field
 * parsed): stream_options only with `stream: true`, as OpenAI and vLLM refuse it otherwise;
 * min_tokens at most the output limit, as vLLM requires.
 */
export function checkCommonRules(ctx: z.core.ParsePayload<RuleFields>): void {
  const req = ctx.value;
  if (req.stream_options != null && req.stream !== true) {
    ctx.issues.push({
      code: 'custom',
      path: ['stream_options'],
      input: req.stream_options,
      message: 'only allowed when stream is true',
      params: { plain: true, got: null } satisfies Wording,
    });
  }
  const limit = outputLimit(req);
  if (req.min_tokens != null && limit !== undefined && req.min_tokens > limit.tokens) {
    ctx.issues.push({
      code: 'custom',
      path: ['min_tokens'],
      input: req.min_tokens,
      message: `at most ${limit.field} (${limit.tokens})`,
    });
  }
}

interface OutputLimitFields {
  readonly max_tokens?: number | null;
  readonly max_completion_tokens?: number | null;
}

/**
 * A chat or text completion's body with the served model where it names none: vLLM's server
 * (0.7 on) serves its model to such a request. `model: null` is kept, and refused by name.
 */
export function withServedModel(body: unknown, served: string): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  return Object.hasOwn(body, 'model') ? body : { model: served, ...body };
}

/** The output limit of a text completion that names none. */
export const COMPLETION_MAX_TOKENS = 16;

/**
 * The output limit a request set, or a text completion's default, and under which field name
 * (for error messages); none: undefined.
 */
export function outputLimit(
  req: OutputLimitFields & { readonly prompt?: unknown },
): { readonly tokens: number; readonly field: string } | undefined {
  if (req.max_completion_tokens != null)
    return { tokens: req.max_completion_tokens, field: 'max_completion_tokens' };
  if (req.max_tokens != null) return { tokens: req.max_tokens, field: 'max_tokens' };
  // A text completion (it has a prompt) that names no limit gets OpenAI's and vLLM's 16; an
  // explicit null is none, the rest of the context, as in vLLM.
  if (req.prompt !== undefined && req.max_tokens === undefined) {
    return { tokens: COMPLETION_MAX_TOKENS, field: 'max_tokens' };
  }
  return undefined;
}

/** Whether a streamed response must end with a usage chunk. */
export function includeUsage(req: {
  readonly stream_options?: { readonly include_usage?: boolean | null } | null;
}): boolean {
  return req.stream_options?.include_usage === true;
}

/**
 * Whether every chunk of the stream carries the usage so far (vLLM's `continuous_usage_stats`),
 * the prompt's tokens and its choice's: only beside `include_usage`, as vLLM takes it.
 */
export function continuousUsage(req: {
  readonly stream_options?: {
    readonly include_usage?: boolean | null;
    readonly continuous_usage_stats?: boolean | null;
  } | null;
}): boolean {
  return includeUsage(req) && req.stream_options?.continuous_usage_stats === true;
}

/**
 * For a server whose replies are filler text (a simulated engine): what filler cannot answer is
 * a 400 naming the field, never a reply that ignores what was asked — a reply format
 * (`unconstrainedOnly`), log probabilities or a bias on them, which filler has none of. A tool
 * call required it answers, its words the call's arguments (filler-tool-call.ts).
 */
export function fillerAnswerable(
  req: Parameters<typeof unconstrainedOnly>[0] & {
    readonly logprobs?: boolean | number | null;
    readonly logit_bias?: Readonly<Record<string, number>> | null;
  },
  server: string,
): void {
  unconstrainedOnly(req, server);
  const asked = req.logprobs;
  if (asked != null && asked !== false) {
    throw invalidRequest(
      `logprobs: not supported by ${server}, whose filler has no token probabilities (expected false or absent), got ${describeValue(asked)}`,
      'logprobs',
    );
  }
  const bias = req.logit_bias;
  if (bias == null || Object.keys(bias).length === 0) return;
  throw invalidRequest(
    `logit_bias: not supported by ${server}, whose filler has no token probabilities to bias (expected {} or absent), got ${describeValue(bias)}`,
    'logit_bias',
  );
}

/**
 * vLLM's rule for a request's priority: anything but 0 only where the engine schedules by it
 * (`--scheduling-policy priority`); `who` says why it is refused otherwise.
 */
export function priorityAllowed(
  req: { readonly priority?: number | null },
  allowed: boolean,
  who: string,
): void {
  const p = req.priority;
  if (p == null || p === 0 || allowed) return;
  throw invalidRequest(`priority: expected 0 or absent (${who}), got ${p}`, 'priority');
}
