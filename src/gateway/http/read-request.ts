/**
 * A completion request's body read as the request it goes upstream as: parsed by its endpoint's
 * schema (a Responses request made into the chat completion it is, and kept beside it for its
 * answer's echo), for a model the fleet serves, asking nothing the fleet cannot answer — filler
 * text follows no form — and with one prompt.
 */
import {
  describeValue,
  fillerAnswerable,
  invalidRequest,
  modelNotFound,
  parseChatCompletionRequest,
  parseCompletionRequest,
  parseJsonText,
  priorityAllowed,
  promptList,
  asChatRequest,
  parseResponsesRequest,
  type ResponsesRequest,
} from '../../openai/index.ts';
import type { Endpoint } from '../backend.ts';
import type { CompletionsDeps } from './completions.ts';
import type { Parsed } from './serve-admitted.ts';

export interface ReadRequest {
  readonly parsed: Parsed;
  /** The Responses request `parsed` was made from, when it came to /v1/responses. */
  readonly responses?: ResponsesRequest;
}

/** The body as the request it goes upstream as, and the Responses request it was made from. */
export function readRequest(kind: Endpoint, bodyText: string, deps: CompletionsDeps): ReadRequest {
  const json = parseJsonText(bodyText);
  let responses: ResponsesRequest | undefined;
  let parsed: Parsed;
  if (kind === 'responses') {
    responses = parseResponsesRequest(json);
    parsed = asChatRequest(responses);
  } else {
    parsed = kind === 'chat' ? parseChatCompletionRequest(json) : parseCompletionRequest(json);
  }
  if (!deps.servedModels.includes(parsed.model)) {
    throw modelNotFound(parsed.model, deps.servedModels);
  }
  const form = responses?.text?.format;
  // Named as the client sent it: the chat's response_format is its text.format.
  if (deps.fillerReplies && form != null && form.type !== 'text') {
    throw invalidRequest(
      `text.format: not supported by the simulated fleet (expected {"type":"text"} or absent), got ${describeValue(form)}`,
      'text.format',
    );
  }
  if (deps.fillerReplies) fillerAnswerable(parsed, 'the simulated fleet');
  priorityAllowed(parsed, false, "the gateway sets it from the request's class");
  if (kind === 'completion' && promptList(parsed as never).length !== 1) {
    throw invalidRequest(
      'prompt: expected one prompt (batched prompts are not supported)',
      'prompt',
      'invalid_value',
    );
  }
  return { parsed, responses };
}
