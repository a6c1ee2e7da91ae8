/**
 * The words of a refusal that only its request can supply, where a reason's fixed words would
 * leave the client guessing: the class it asked for and those its tenant is granted (403
 * `class_not_granted`); the sizes of a prompt too long, with `param` naming the prompt's field
 * as OpenAI's does — `messages`, `prompt` or `input` (400 `context_length`); and the charge a
 * tenant's whole token window cannot hold (the final 429 `tenant_tokens`). Main rule: a message
 * names the values and numbers that decided it, in the body's own field names, and nothing of
 * the policy beyond them.
 */
import type { ContextOverflow, Rejection } from '../../core/request/decision.ts';
import { choicesOf } from '../../core/request/demand.ts';
import type { LlmRequest } from '../../core/request/request.ts';
import type { TenantPolicy } from '../../core/request/tenant.ts';
import { outputLimit } from '../../openai/index.ts';
import type { Endpoint } from '../backend.ts';
import type { Parsed } from './serve-admitted.ts';

/** A refusal's message and the field at fault, in place of its reason's fixed words. */
export interface Words {
  readonly message: string;
  readonly param?: string;
}

/** What a refusal's words may name of the request, beyond its sizes. */
export interface Asked {
  readonly endpoint: Endpoint;
  /** The body's name for its output cap: `max_tokens`, `max_completion_tokens`, `max_output_tokens`. */
  readonly outputField: string;
  /** The classes its tenant is granted; unknown for a tenant the policy does not know. */
  readonly granted?: readonly string[];
}

/** The field that holds each endpoint's prompt, as OpenAI's `param` names it. */
const PROMPT_FIELDS: Readonly<Record<Endpoint, string>> = {
  chat: 'messages',
  completion: 'prompt',
  responses: 'input',
};

export function askedOf(endpoint: Endpoint, parsed: Parsed, tenant?: TenantPolicy): Asked {
  // A Responses request is read as the chat request it is, its output cap renamed.
  const outputField =
    endpoint === 'responses' ? 'max_output_tokens' : (outputLimit(parsed)?.field ?? 'max_tokens');
  return tenant === undefined
    ? { endpoint, outputField }
    : { endpoint, outputField, granted: tenant.classes };
}

/** The words of `d`, a refusal of `req`; undefined: its reason's fixed words say all there is. */
export function wordsFor(d: Rejection, req: LlmRequest, asked: Asked): Words | undefined {
  if (d.reason === 'class_not_granted' && asked.granted !== undefined) {
    const granted = asked.granted.length === 0 ? 'none' : asked.granted.join(', ');
    return {
      message: `this tenant is not granted the class it asked for, "${req.sloClass}" (granted: ${granted})`,
    };
  }
  if (d.reason === 'context_length' && d.context !== undefined) {
    return overflowWords(d.context, asked);
  }
  return undefined;
}

/**
 * The words of a prompt and output too long (`context_length`): the sizes, so the client knows
 * what to cut, and the prompt's field. Without `asked`, the chat endpoint's names.
 */
export function overflowWords(c: ContextOverflow, asked?: Asked): Words {
  const tokens = `${c.promptTokens} token${c.promptTokens === 1 ? '' : 's'}`;
  const prompt = `the prompt (${c.promptAtLeast ? 'at least ' : ''}${tokens})`;
  const output =
    c.limit === 'kv_cache' ? 'the output reserved for it' : (asked?.outputField ?? 'max_tokens');
  const what =
    c.outputTokens === undefined ? prompt : `${prompt} and ${output} (${c.outputTokens})`;
  const exceed = c.outputTokens === undefined ? 'exceeds' : 'exceed';
  // OpenAI's and vLLM's words, which clients match ("maximum context length") to tell an overflow.
  const message =
    c.limit === 'kv_cache'
      ? `${what} ${exceed} a replica's usable KV cache of ${c.limitTokens} tokens`
      : `This model's maximum context length is ${c.limitTokens} tokens: ${what} ${exceed} it`;
  return { message, param: PROMPT_FIELDS[asked?.endpoint ?? 'chat'] };
}

/**
 * The words of a request whose own charge, `charge` tokens, is more than its tenant's whole
 * window of `windowTokens` holds: what the charge is made of, and the window's size, so the
 * client sees that only a smaller request can pass.
 */
export function beyondWindowWords(
  req: LlmRequest,
  charge: number,
  windowTokens: number,
  asked: Asked,
): Words {
  const choices = choicesOf(req);
  const cap =
    req.maxTokens === undefined
      ? `a predicted output of ${Math.ceil((charge - req.inputTokens) / choices)}`
      : `${asked.outputField} ${req.maxTokens}`;
  const output = choices === 1 ? cap : `${choices} × ${cap}`;
  return {
    message:
      `this request needs ${grouped(charge)} tokens (prompt ${req.inputTokens} + ${output}); ` +
      `the tenant's whole window holds ${grouped(windowTokens)} (tokens_per_window), so no retry can succeed`,
  };
}

const grouped = (n: number): string => Math.ceil(n).toLocaleString('en-US');
