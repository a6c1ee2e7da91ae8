/**
 * The OpenTelemetry GenAI semantic conventions' attribute names the gateway writes
 * (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/), and Goodput's own under
 * `goodput.*`. The GenAI names are still in development: the conventions package keeps them in
 * its `incubating` entry point, which it asks instrumentation not to import but to copy, so a
 * minor release of it cannot rename what dashboards query. Stable names (server.*, http.*,
 * error.type) come from the package itself.
 */
export const GEN_AI_OPERATION_NAME = 'gen_ai.operation.name';
export const GEN_AI_REQUEST_MODEL = 'gen_ai.request.model';
export const GEN_AI_REQUEST_MAX_TOKENS = 'gen_ai.request.max_tokens';
export const GEN_AI_REQUEST_STREAM = 'gen_ai.request.stream';
export const GEN_AI_RESPONSE_ID = 'gen_ai.response.id';
export const GEN_AI_RESPONSE_FINISH_REASONS = 'gen_ai.response.finish_reasons';
/** Seconds from the request's issue (here: the attempt's start) to the first chunk. */
export const GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK = 'gen_ai.response.time_to_first_chunk';
export const GEN_AI_USAGE_INPUT_TOKENS = 'gen_ai.usage.input_tokens';
export const GEN_AI_USAGE_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens';
export const GEN_AI_CONVERSATION_ID = 'gen_ai.conversation.id';

/** `gen_ai.operation.name` of each endpoint. */
export const OPERATION = {
  chat: 'chat',
  completion: 'text_completion',
  // Served over chat, and a chat in the conventions' terms.
  responses: 'chat',
} as const;

export const GOODPUT_REQUEST_ID = 'goodput.request_id';
export const GOODPUT_CLASS = 'goodput.class';
export const GOODPUT_TENANT = 'goodput.tenant';
/** The admission's result: admit, degrade, defer, reject (and expire, for a wait that ran out). */
export const GOODPUT_DECISION = 'goodput.decision';
/** Why it was refused, expired or cut: the closed-enum reason (`x-goodput-reason`). */
export const GOODPUT_REASON = 'goodput.reason';
export const GOODPUT_TTFT_MS = 'goodput.ttft_ms';
/** Time waited in the gateway's queue, over every attempt. */
export const GOODPUT_QUEUE_MS = 'goodput.queue_ms';
/** The client's own targets (`x-slo-ttft-ms`, `x-slo-tpot-ms`): recorded, not enforced. */
export const GOODPUT_TARGET_TTFT_MS = 'goodput.target.ttft_ms';
export const GOODPUT_TARGET_TPOT_MS = 'goodput.target.tpot_ms';
export const GOODPUT_BACKEND = 'goodput.backend';
/** The attempt's number within the request, from 1. */
export const GOODPUT_ATTEMPT = 'goodput.attempt';
export const GOODPUT_ATTEMPT_OUTCOME = 'goodput.attempt.outcome';
