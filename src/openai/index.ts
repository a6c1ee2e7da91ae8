/**
 * OpenAI's wire format, shared by every Goodput server that speaks it (the simulated engine,
 * the gateway): request schemas and their parsers, error bodies, whole responses, SSE chunks,
 * and the tokenizer-free prompt estimate. Main rule: nothing here knows about engines, HTTP
 * frameworks or clocks — callers pass ids, times and counts in. A body is read as
 * `parseXRequest(parseJsonText(decodeUtf8(bytes)))`: each step refuses what it cannot vouch
 * for with a 400 naming the field, and nothing a client sends is silently dropped.
 */
export {
  OpenAiError,
  type OpenAiErrorBody,
  describeValue,
  errorBody,
  errorResponse,
  invalidRequest,
  isOpenAiError,
  modelNotFound,
  payloadTooLarge,
  unsupportedEncoding,
  checkIdentityEncoding,
  checkJsonContentType,
  routeNotFound,
  serverError,
} from './errors.ts';
export {
  type Wording,
  expect,
  fieldPath,
  parseJsonText,
  parseWith,
  refusal,
  text,
} from './validation.ts';
export { MAX_JSON_DEPTH, checkJsonShape } from './json-shape.ts';
export { decodeUtf8 } from './utf8-text.ts';
export {
  MAX_CHOICES,
  MAX_TOKENS_LIMIT,
  checkCommonRules,
  choiceCount,
  commonFields,
  includeUsage,
  continuousUsage,
  outputLimit,
  fillerAnswerable,
  priorityAllowed,
  servedTier,
  withServedModel,
} from './request-fields.ts';
export {
  RESPONSE_FORMATS,
  STRUCTURED_KINDS,
  constraintsOf,
  unconstrainedOnly,
} from './constraint-fields.ts';
export { unsupportedFields, unsupportedMessageFields } from './unsupported-fields.ts';
export {
  CHAT_ROLES,
  type ChatCompletionRequest,
  type ChatMessage,
  type ChatRole,
  MAX_MESSAGES,
  chatCompletionRequestSchema,
  chatMessageSchema,
  parseChatCompletionRequest,
  reasoningEffortOf,
} from './chat-request.ts';
export { TOOL_CHOICES, type ChatTool, type ToolCall } from './tool-fields.ts';
export {
  INPUT_ROLES,
  MAX_INPUT_ITEMS,
  conversationItems,
  listedItem,
  type InputItem,
} from './response-items.ts';
export {
  type ResponsesRequest,
  MAX_RESPONSE_ID_CHARS,
  asChatRequest,
  parseResponsesRequest,
  responsesRequestSchema,
  fillerAnswerableResponse,
  statelessOnly,
} from './responses-request.ts';
export { responsesParam } from './responses-param.ts';
export {
  type ReplyEnd,
  type ReplyPiece,
  type ResponsesHead,
  ResponseBuilder,
} from './response-events.ts';
export { FillerToolCall, requiredToolName } from './filler-tool-call.ts';
export { type ImagePart, holdsImages, imagesSizable } from './image-parts.ts';
export {
  type CompletionPrompt,
  type CompletionRequest,
  completionRequestSchema,
  fillerEcho,
  parseCompletionRequest,
  promptList,
} from './completion-request.ts';
export {
  CHARS_PER_TOKEN,
  type ChatPrompt,
  MAX_TOKEN_ID,
  TOKENS_PER_MESSAGE,
  TOKENS_PER_REPLY,
  estimateChatTokens,
  estimateChatPrompt,
  estimateCompletionTokens,
  estimateTextTokens,
  leastChatTokens,
  messageText,
  leastTextTokens,
  MAX_TOKEN_BYTES,
  renderChatPrompt,
  renderCompletionPrompt,
} from './prompt-tokens.ts';
export { type PromptSize, chatPromptSize, completionPromptSize } from './prompt-size.ts';
export {
  type PromptBlockHashes,
  chatBlockHashes,
  completionBlockHashes,
  promptBlockHashes,
} from './prefix-hashes.ts';
export {
  type AnswerApi,
  type FinishReason,
  type ModelCard,
  type ReplyExtras,
  type ResponseHead,
  type Usage,
  answerId,
  chatChoice,
  chatCompletion,
  chatCompletionOf,
  modelList,
  textChoice,
  textCompletion,
  textCompletionOf,
  usage,
} from './responses.ts';
export {
  type ChatDelta,
  type ChunkHead,
  type ToolCallDelta,
  Logprobs,
  ToolCalls,
  SSE_DONE,
  SSE_HEADERS,
  chatChunk,
  sseData,
  textChunk,
  usageChunk,
  usageSoFar,
  type ChunkUsage,
} from './chunks.ts';
export { truncationStart } from './truncation.ts';
