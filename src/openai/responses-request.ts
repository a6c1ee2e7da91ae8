/**
 * `POST /v1/responses` request body: OpenAI's Responses API, which agent SDKs now default to,
 * and the vLLM fields its own Responses server takes beside OpenAI's, with chat's rules. The
 * conversation comes in `input` (a string, or items: messages, the function calls a reply made
 * and their outputs, a reasoning model's thinking), with `instructions` as its system message:
 * whole, or only what is new beside `previous_response_id`, the stored response it follows
 * (which a server without a store refuses: `statelessOnly`). Main rule: it is served as the
 * chat completion it is (`asChatRequest`), which vLLM's own Responses server renders through the
 * same chat template, so admission, routing, metering and every backend see one kind of request.
 * A reasoning effort goes to the chat template, log probabilities asked with `include` are
 * asked as chat asks them, and `prompt_cache_key`, the conversation's id, is the gateway's
 * session. `background` runs the response apart from its request, polled from the store, or
 * streamed and taken up again from it; `truncation: "auto"` holds the conversation to the
 * context (truncation.ts). What needs a stored conversation (`conversation`), a built-in tool
 * (web search, file search, MCP) or a part that
 * is neither text nor a user's image (image-parts.ts) is a 400 naming the field, never silently
 * dropped. A reasoning item carried back is not rendered, as chat templates drop past turns'
 * thinking.
 */
import { z } from 'zod';
import { describeValue, invalidRequest } from './errors.ts';
import { MAX_INPUT_ITEMS, chatMessages, input } from './response-items.ts';
import { tooManyImages } from './image-parts.ts';
import type { ChatCompletionRequest } from './chat-request.ts';
import {
  commonFields,
  maxTokens,
  promptCacheKey,
  serviceTier,
  topP,
  unitNumber,
} from './request-fields.ts';
import { neutralOnly } from './unsupported-fields.ts';
import { metadata } from './metadata-field.ts';
import {
  byForm,
  expect,
  flag,
  isObject,
  jsonObject,
  judgedList,
  listOf,
  parseWith,
  refusal,
  refuseLongList,
  text,
  type Wording,
} from './validation.ts';

/**
 * The longest response id looked up. The gateway's ids are `resp_` and a UUID (41 characters);
 * a longer one was never kept, and is refused before it becomes a key the store is asked for.
 */
export const MAX_RESPONSE_ID_CHARS = 256;

/** A function the model may call: the Responses API's flat form of chat's tool. */
const functionTool = z.strictObject({
  type: z.literal('function'),
  name: text('a non-empty string').min(1),
  description: text('a string').nullish(),
  parameters: jsonObject('a JSON schema (an object)').nullish(),
  strict: flag(),
});
const TOOL = 'a function tool ({"type": "function", "name": …, "parameters": {…}})';
const builtInTool = z.looseObject({
  type: z.literal('function', expect('"function" (built-in tools are not served)')),
});
const tool = byForm(
  (v) => (!isObject(v) ? undefined : v.type === 'function' ? functionTool : builtInTool),
  TOOL,
);

const CHOICES = ['none', 'auto', 'required'] as const;
const CHOICE = `one of ${CHOICES.join(', ')}, or {"type": "function", "name": …}`;
const namedChoice = z.strictObject(
  { type: z.literal('function', expect('"function"')), name: text('a non-empty string').min(1) },
  expect('{"type": "function", "name": …}'),
);
const choiceWord = z.enum(CHOICES, expect(`one of ${CHOICES.join(', ')}`));
const toolChoice = byForm<(typeof CHOICES)[number] | z.output<typeof namedChoice>>(
  (v) => (typeof v === 'string' ? choiceWord : isObject(v) ? namedChoice : undefined),
  CHOICE,
);

const FORMATS = ['text', 'json_object', 'json_schema'] as const;
/** The reply's form: text, any JSON object, or JSON under a schema (flat, unlike chat's). */
const format = z
  .strictObject(
    {
      type: z.enum(FORMATS, expect(`one of ${FORMATS.join(', ')}`)),
      name: text('a non-empty string').min(1).nullish(),
      description: text('a string').nullish(),
      schema: jsonObject('a JSON schema (an object)').nullish(),
      strict: flag(),
    },
    expect('an object ({"type": "json_schema", "name": …, "schema": {…}}, …)'),
  )
  .check((ctx) => {
    const f = ctx.value;
    if (f.type === 'json_schema' && (f.name == null || f.schema == null)) {
      const field = f.name == null ? 'name' : 'schema';
      ctx.issues.push({
        code: 'custom',
        path: [field],
        input: f[field],
        message: `${field === 'name' ? 'a non-empty string' : 'a JSON schema (an object)'} when type is json_schema`,
      });
    }
  });

/** What a server without a store of responses says to a field that names one. */
const STATELESS = 'send the whole conversation in input';

/** Reasoning efforts, as vLLM's Responses server takes them. */
export const EFFORTS = ['none', 'minimal', 'low', 'medium', 'high'] as const;
const SUMMARIES = ['auto', 'concise', 'detailed'] as const;
/**
 * What `include` may ask for: the reply's log probabilities (`top_logprobs` likeliest beside
 * each sampled token's, asked of the backend as chat asks them), and a reasoning item's
 * encrypted content, which a stateless agent asks for to carry its thinking to the next turn. A
 * served model has none to give, and a reasoning item carried back is not rendered, so asking
 * for it changes nothing.
 */
const INCLUDABLE = ['message.output_text.logprobs', 'reasoning.encrypted_content'] as const;
const LOGPROBS = INCLUDABLE[0];
/** The most likely tokens beside each sampled one a Responses request may ask for (OpenAI's). */
const MAX_TOP_LOGPROBS = 20;
const includable = z.enum(INCLUDABLE, expect(`${INCLUDABLE.join(' or ')} (the ones served)`));
const isIncludable = (v: unknown): v is (typeof INCLUDABLE)[number] =>
  (INCLUDABLE as readonly unknown[]).includes(v);

/** The fields vLLM's Responses server takes beside OpenAI's, as chat takes them. */
const VLLM_EXTRAS = {
  top_k: commonFields.top_k,
  repetition_penalty: commonFields.repetition_penalty,
  seed: commonFields.seed,
  stop: commonFields.stop,
  ignore_eos: commonFields.ignore_eos,
  skip_special_tokens: commonFields.skip_special_tokens,
  include_stop_str_in_output: commonFields.include_stop_str_in_output,
  cache_salt: commonFields.cache_salt,
  priority: commonFields.priority,
  structured_outputs: commonFields.structured_outputs,
};

export const responsesRequestSchema = z
  .strictObject(
    {
      model: text('a model name').min(1),
      input,
      instructions: text('a string').nullish(),
      max_output_tokens: maxTokens,
      temperature: unitNumber(0, 2),
      top_p: topP(),
      stream: flag(),
      stream_options: z
        .strictObject({ include_obfuscation: neutralOnly([false]) }, expect('an object'))
        .nullish(),
      tools: judgedList(tool, 'an array of function tools').nullish(),
      tool_choice: toolChoice.nullish(),
      parallel_tool_calls: flag(),
      text: z
        .strictObject(
          { format: format.nullish(), verbosity: neutralOnly(['medium']) },
          expect('an object ({"format": {…}})'),
        )
        .nullish(),
      /** Keep the response for its next turn and for lookup (absent: kept, as OpenAI's are). */
      store: flag(),
      metadata: metadata.nullish(),
      user: text('a string').nullish(),
      request_id: text('a string').nullish(),
      safety_identifier: text('a string').nullish(),
      prompt_cache_key: promptCacheKey,
      prompt_cache_retention: neutralOnly(['in_memory']),
      /** How hard the model thinks: vLLM's chat template switch (`asChatRequest`). */
      reasoning: z
        .strictObject(
          {
            effort: z.enum(EFFORTS, expect(`one of ${EFFORTS.join(', ')}`)).nullish(),
            // Summaries of the thinking: a served model gives none, and its thinking comes whole.
            summary: z.enum(SUMMARIES, expect(`one of ${SUMMARIES.join(', ')}`)).nullish(),
            generate_summary: z.enum(SUMMARIES, expect(`one of ${SUMMARIES.join(', ')}`)).nullish(),
          },
          expect('an object ({"effort": …})'),
        )
        .nullish(),
      include: listOf(isIncludable, includable, 'an array').nullish(),
      top_logprobs: z
        .int(expect(`an integer in [0, ${MAX_TOP_LOGPROBS}]`))
        .min(0)
        .max(MAX_TOP_LOGPROBS)
        .nullish(),
      // vLLM's own, as its Responses server takes them, each with chat's rules.
      ...VLLM_EXTRAS,
      // What needs a stored response, a built-in tool or a model's knobs no backend here takes.
      previous_response_id: text(`a response id of 1 to ${MAX_RESPONSE_ID_CHARS} characters`)
        .min(1)
        .max(MAX_RESPONSE_ID_CHARS)
        .nullish(),
      conversation: z
        .custom<never>(
          () => false,
          refusal(`not supported: conversations are not stored here; ${STATELESS}`),
        )
        .nullish(),
      background: flag(),
      prompt: neutralOnly([]),
      max_tool_calls: neutralOnly([]),
      truncation: z.enum(['auto', 'disabled'], expect('auto or disabled (the default)')).nullish(),
      service_tier: serviceTier,
    },
    expect('a JSON object'),
  )
  .check((ctx) => {
    const r = ctx.value;
    // A response run apart from its request is polled, or its stream taken up, from the store.
    if (r.background === true && r.store === false) {
      ctx.issues.push({
        code: 'custom',
        path: ['background'],
        input: r.background,
        message: 'false or absent with store false: a background response is polled from the store',
      });
    }
    const images = tooManyImages(r.input, 'input');
    if (images !== undefined) ctx.issues.push(images);
    const choice = r.tool_choice;
    const names = (r.tools ?? []).map((t) => t.name);
    if (choice != null && choice !== 'none' && names.length === 0) {
      ctx.issues.push({
        code: 'custom',
        path: ['tool_choice'],
        input: choice,
        message: '"none" or absent when no tools are given',
      });
    } else if (typeof choice === 'object' && choice !== null && !names.includes(choice.name)) {
      ctx.issues.push({
        code: 'custom',
        path: ['tool_choice', 'name'],
        input: choice.name,
        message: `the name of one of the tools (${names.map((n) => JSON.stringify(n)).join(', ')})`,
      });
    }
    // vLLM's rules: one constraint per reply, and none beside a tool call required.
    const form = r.text?.format?.type;
    const held = form !== undefined && form !== 'text' ? `text.format ${form}` : undefined;
    if (held !== undefined && r.structured_outputs != null) {
      ctx.issues.push({
        code: 'custom',
        path: ['structured_outputs'],
        input: r.structured_outputs,
        message: `absent beside ${held} (one constraint per reply)`,
      });
    }
    // As chat's rule: the likeliest tokens only with the sampled one's.
    if (r.top_logprobs != null && r.top_logprobs > 0 && r.include?.includes(LOGPROBS) !== true) {
      ctx.issues.push({
        code: 'custom',
        path: ['top_logprobs'],
        input: r.top_logprobs,
        message: `only allowed when include has ${LOGPROBS}`,
        params: { plain: true, got: null } satisfies Wording,
      });
    }
    const constraint = held ?? (r.structured_outputs != null ? 'structured_outputs' : undefined);
    if (constraint !== undefined && choice != null && choice !== 'none' && choice !== 'auto') {
      ctx.issues.push({
        code: 'custom',
        path: ['tool_choice'],
        input: choice,
        message: `"none", "auto" or absent beside ${constraint} (a reply held to a form is no tool call)`,
      });
    }
  });

export type ResponsesRequest = z.output<typeof responsesRequestSchema>;

export function parseResponsesRequest(body: unknown): ResponsesRequest {
  refuseLongList(body, 'input', MAX_INPUT_ITEMS, 'items');
  return parseWith(responsesRequestSchema, body);
}

/**
 * For a server that keeps no responses (the engine; a gateway told to keep none): a request
 * that follows a stored one, or is to be polled from the store, refused, naming the field.
 */
export function statelessOnly(r: ResponsesRequest, server: string): void {
  if (r.background === true) {
    throw invalidRequest(
      `background: not supported: ${server} stores no responses to poll; ask without it, got true`,
      'background',
    );
  }
  if (r.previous_response_id == null) return;
  throw invalidRequest(
    `previous_response_id: not supported: ${server} stores no responses; ${STATELESS}, got ${describeValue(r.previous_response_id)}`,
    'previous_response_id',
  );
}

/**
 * For a server whose replies are filler text: a form asked of the reply, or its log
 * probabilities, refused by the name the client sent (`text.format`, `include`; chat's
 * `response_format` and `logprobs` are what they become).
 */
export function fillerAnswerableResponse(r: ResponsesRequest, server: string): void {
  const form = r.text?.format;
  if (form != null && form.type !== 'text') {
    throw invalidRequest(
      `text.format: not supported by ${server} (expected {"type":"text"} or absent), got ${describeValue(form)}`,
      'text.format',
    );
  }
  if (r.include?.includes(LOGPROBS) === true) {
    throw invalidRequest(
      `include: ${LOGPROBS} not supported by ${server}, whose filler has no token probabilities, got ${describeValue(r.include)}`,
      'include',
    );
  }
}

/**
 * The chat completion a Responses request is: instructions as the system message, each message
 * as it reads, a reply's function calls as its assistant message's tool calls, their outputs as
 * tool messages; the tools, the choice among them and the reply's form in chat's shapes. It holds
 * to chat's rules as built, since the Responses schema checks what chat's would (its tests parse
 * what it builds as chat): it is not judged twice.
 */
export function asChatRequest(r: ResponsesRequest): ChatCompletionRequest {
  const messages = chatMessages(r.instructions, r.input);
  const choice = r.tool_choice;
  const form = r.text?.format;
  const effort = r.reasoning?.effort;
  const chat = {
    model: r.model,
    messages,
    max_tokens: r.max_output_tokens,
    temperature: r.temperature,
    top_p: r.top_p,
    stream: r.stream,
    user: r.user,
    request_id: r.request_id,
    top_k: r.top_k,
    repetition_penalty: r.repetition_penalty,
    seed: r.seed,
    stop: r.stop,
    ignore_eos: r.ignore_eos,
    skip_special_tokens: r.skip_special_tokens,
    include_stop_str_in_output: r.include_stop_str_in_output,
    cache_salt: r.cache_salt,
    priority: r.priority,
    structured_outputs: r.structured_outputs,
    ...(r.include?.includes(LOGPROBS) === true
      ? { logprobs: true, top_logprobs: r.top_logprobs ?? 0 }
      : {}),
    // As vLLM's Responses server passes an effort to the chat template: thinking off at none.
    chat_template_kwargs:
      effort == null
        ? undefined
        : {
            enable_thinking: effort !== 'none',
            reasoning_effort: effort === 'minimal' ? 'low' : effort,
          },
    tools: r.tools?.map(({ type, ...fn }) => ({ type, function: fn })),
    tool_choice:
      typeof choice === 'object' && choice !== null
        ? { type: 'function', function: { name: choice.name } }
        : choice,
    parallel_tool_calls: r.parallel_tool_calls,
    response_format:
      form == null || form.type === 'text'
        ? undefined
        : form.type === 'json_object'
          ? { type: 'json_object' }
          : {
              type: 'json_schema',
              json_schema: {
                name: form.name,
                description: form.description,
                schema: form.schema,
                strict: form.strict,
              },
            },
  };
  return chat as ChatCompletionRequest;
}
