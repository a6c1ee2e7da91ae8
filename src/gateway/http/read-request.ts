/**
 * A completion request's body read as the request it goes upstream as: parsed by its endpoint's
 * schema (a Responses request made into the chat completion it is, and kept beside it for its
 * answer's echo), for a model the fleet serves and its tenant may use, asking nothing the fleet cannot answer — filler
 * text follows no form — and with one prompt.
 */
import {
  fillerAnswerable,
  fillerEcho,
  imagesSizable,
  invalidRequest,
  modelNotFound,
  parseChatCompletionRequest,
  parseCompletionRequest,
  parseJsonText,
  priorityAllowed,
  promptList,
  asChatRequest,
  parseResponsesRequest,
  fillerAnswerableResponse,
  withServedModel,
  type CompletionRequest,
  type InputItem,
  type ResponsesRequest,
} from '../../openai/index.ts';
import type { Rejection } from '../../core/request/decision.ts';
import type { ServiceTier } from '../../core/request/slo-classes.ts';
import type { Endpoint } from '../backend.ts';
import type { CompletionsDeps } from './completions.ts';
import type { Parsed } from './serve-admitted.ts';

export interface ReadRequest {
  readonly parsed: Parsed;
  /** The Responses request `parsed` was made from, when it came to /v1/responses. */
  readonly responses?: ResponsesRequest;
  /** Its `prompt_cache_key`: the conversation it belongs to, which no backend reads. */
  readonly cacheKey?: string;
  /** The service tier it names (`service_tier`): the gateway's to read, as its class. */
  readonly tier?: ServiceTier;
  /**
   * The earlier turns of the stored response a Responses request follows, and that response's
   * output, as items with ids (kept-responses.ts): `parsed` has them before its own input.
   */
  readonly history?: readonly InputItem[];
  /** Why it is refused though it was read: the stored response it follows out of reach now. */
  readonly refusal?: Rejection;
}

/**
 * The body as the request it goes upstream as, the Responses request it was made from, and the
 * conversation it names. `models`: those its tenant may use, of the served ones; any other is
 * refused as a model that does not exist, naming only these.
 */
export function readRequest(
  kind: Endpoint,
  bodyText: string,
  deps: CompletionsDeps,
  models: readonly string[] = deps.servedModels,
): ReadRequest {
  const json = parseJsonText(bodyText);
  let responses: ResponsesRequest | undefined;
  let parsed: Parsed;
  let cacheKey: string | undefined;
  let tier: ServiceTier | undefined;
  if (kind === 'responses') {
    responses = parseResponsesRequest(withServedModel(json, deps.servedModels[0]));
    imagesSizable(responses.input, deps.imageTokens, 'input', 'this gateway');
    parsed = asChatRequest(responses);
    cacheKey = responses.prompt_cache_key ?? undefined;
    tier = responses.service_tier ?? undefined;
  } else if (kind === 'chat') {
    const chat = parseChatCompletionRequest(withServedModel(json, deps.servedModels[0]));
    imagesSizable(chat.messages, deps.imageTokens, 'messages', 'this gateway');
    parsed = chat;
    if (chat.prompt_cache_key != null) {
      // The gateway's to read: a vLLM would log each request's as a field it ignored.
      const { prompt_cache_key: key, ...rest } = chat;
      cacheKey = key;
      parsed = rest;
    }
  } else {
    parsed = parseCompletionRequest(withServedModel(json, deps.servedModels[0]));
  }
  // The gateway's too: the class it is served in. It stays in the body, for the answer to name
  // the tier served; no backend is sent it (upstream-attempt.ts).
  if (parsed.service_tier != null) tier = parsed.service_tier;
  if (!models.includes(parsed.model)) throw modelNotFound(parsed.model, models);
  if (deps.fillerReplies) {
    if (responses !== undefined) fillerAnswerableResponse(responses, 'the simulated fleet');
    fillerAnswerable(parsed, 'the simulated fleet');
    if (kind === 'completion') fillerEcho(parsed as CompletionRequest, 'the simulated fleet');
  }
  priorityAllowed(parsed, false, "the gateway sets it from the request's class");
  if (kind === 'completion' && promptList(parsed as never).length !== 1) {
    throw invalidRequest(
      'prompt: expected one prompt (batched prompts are not supported)',
      'prompt',
      'invalid_value',
    );
  }
  return { parsed, responses, cacheKey, tier };
}
