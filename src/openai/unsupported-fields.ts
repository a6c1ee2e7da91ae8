/**
 * OpenAI request fields this server knows but does not implement, in one table with the values
 * that ask for nothing — what real clients send by default (`echo: false`, `best_of: 1`,
 * `store: false`). Main rule: a neutral value, null or absence is
 * accepted and kept as sent, so the request forwarded upstream is the client's; any other
 * value is a 400 naming the field — `echo: not supported by this server (expected false or
 * absent), got true` — never silently ignored, since the client would get an answer to a
 * question it did not ask. One table serves both endpoints (vLLM accepts most of these on
 * both); beside it, one holds chat's own fields as a text completion takes them, and one
 * serves chat messages.
 */
import { z } from 'zod';
import { describeValue } from './errors.ts';
import { refusal } from './validation.ts';

type Json = null | boolean | number | string | readonly Json[] | { readonly [k: string]: Json };

/** Deep equality of a parsed JSON value with a (small) neutral value. */
function sameJson(value: unknown, neutral: Json): boolean {
  if (neutral === null || typeof neutral !== 'object') return value === neutral;
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(neutral)) {
    return (
      Array.isArray(value) &&
      value.length === neutral.length &&
      neutral.every((n, i) => sameJson(value[i], n))
    );
  }
  if (Array.isArray(value)) return false;
  const keys = Object.keys(neutral);
  return (
    Object.keys(value).length === keys.length &&
    keys.every(
      (k) =>
        Object.hasOwn(value, k) &&
        sameJson((value as Record<string, unknown>)[k], (neutral as Record<string, Json>)[k]),
    )
  );
}

/** A field accepted only with one of `values` (or null, or absent); its value is kept as sent. */
export function neutralOnly<const V extends readonly Json[]>(values: V) {
  const shown = [...values.map((v) => describeValue(v)), 'absent'];
  const expected = shown.length === 1 ? shown[0] : `${shown.slice(0, -1).join(', ')} or absent`;
  return z
    .custom<V[number]>(
      (v) => values.some((n) => sameJson(v, n)),
      refusal(`not supported by this server (expected ${expected})`),
    )
    .nullish();
}

export const unsupportedFields = {
  // Chat's: vLLM's continuation of the last message. A text completion's is served
  // (completion-request.ts).
  echo: neutralOnly([false]),
  best_of: neutralOnly([1]),
  // vLLM's: the gateway streams from its servers, and vLLM gives a prompt's log probabilities
  // to a whole answer only.
  prompt_logprobs: neutralOnly([]),
  // vLLM's beam search answers with several beams' work for one request.
  use_beam_search: neutralOnly([false]),
  suffix: neutralOnly([]),
  // OpenAI's deprecated forms of tools (tool-fields.ts), which vLLM does not take.
  functions: neutralOnly([[]]),
  function_call: neutralOnly(['none']),
  store: neutralOnly([false]),
  metadata: neutralOnly([{}]),
  modalities: neutralOnly([['text']]),
  audio: neutralOnly([]),
  prediction: neutralOnly([]),
  // A chat's is served (chat-request.ts); vLLM's text completions take none.
  reasoning_effort: neutralOnly([]),
  web_search_options: neutralOnly([]),
  // OpenAI's: a reply's length asked in words (the served models take no such switch), and how
  // long a prompt's cache is kept (a replica's is in its memory, while it fits).
  verbosity: neutralOnly(['medium']),
  prompt_cache_retention: neutralOnly(['in_memory']),
  // vLLM's own, at what its clients send by default: disaggregated prefill's hand-over (a
  // proxy's), answers as token ids, a template or processor's own arguments, RAG documents and
  // a plugin's extra arguments.
  kv_transfer_params: neutralOnly([]),
  return_tokens_as_token_ids: neutralOnly([false]),
  return_token_ids: neutralOnly([false]),
  chat_template: neutralOnly([]),
  mm_processor_kwargs: neutralOnly([{}]),
  documents: neutralOnly([]),
  vllm_xargs: neutralOnly([{}]),
};

/**
 * Chat's own fields, as a text completion takes them: its tools (tool-fields.ts), which a
 * completion cannot call, and its count of likely tokens (a completion's `logprobs` is one).
 */
export const chatFieldsOnCompletions = {
  top_logprobs: neutralOnly([0]),
  tools: neutralOnly([[]]),
  tool_choice: neutralOnly(['none']),
  // Only meaningful with tools, and tools must be empty: either value asks for nothing.
  parallel_tool_calls: neutralOnly([true, false]),
};

/**
 * The same for a chat message's fields: what a client sends back when it appends a response's
 * message (OpenAI's or vLLM's, with its null refusal and no annotations) to the history.
 */
export const unsupportedMessageFields = {
  function_call: neutralOnly([]),
  refusal: neutralOnly([]),
  annotations: neutralOnly([[]]),
  audio: neutralOnly([]),
  reasoning_content: neutralOnly([]),
};
