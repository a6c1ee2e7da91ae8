/**
 * The one place where the backend's rejection reasons become OpenAI errors and HTTP statuses.
 * Main rule: the message names the request field at fault and the numbers that decided it, so
 * a client can tell a prompt that is too long from an output limit that is too large.
 */
import { OpenAiError, invalidRequest, serverError } from '../openai/errors.ts';
import type { RejectReason } from './simulated-backend.ts';

export interface RejectionContext {
  /** `messages` or `prompt`. */
  readonly promptField: string;
  readonly promptTokens: number;
  /** The prompt came as token ids, so its size is exact; otherwise it is an estimate. */
  readonly promptTokensExact?: boolean;
  readonly limit?: { readonly tokens: number; readonly field: string };
  readonly maxModelLen: number;
  readonly kvTokens: number;
  /** The choices asked for (`n`). */
  readonly choices?: number;
}

export function rejectionError(reason: RejectReason, ctx: RejectionContext): OpenAiError {
  const { promptField, promptTokens, maxModelLen } = ctx;
  const estimated = ctx.promptTokensExact === true ? '' : ' (estimated)';
  switch (reason) {
    case 'prompt_exceeds_max_model_len':
      return invalidRequest(
        // vLLM's words, which clients match ("maximum context length") to tell an overflow.
        `This model's maximum context length is ${maxModelLen} tokens. However, your request has ${promptTokens} input tokens${estimated}. Please reduce the length of the input (${promptField}).`,
        promptField,
        'context_length_exceeded',
      );
    case 'prompt_exceeds_kv_capacity':
      return invalidRequest(
        `${promptField}: expected a request that fits the engine's KV cache of ${ctx.kvTokens} tokens, got ${promptTokens} prompt tokens${estimated}${ctx.limit === undefined ? '' : ` and ${ctx.limit.field} ${ctx.limit.tokens}`}`,
        promptField,
        'kv_capacity_exceeded',
      );
    case 'output_exceeds_max_model_len': {
      const field = ctx.limit?.field ?? 'max_tokens';
      return invalidRequest(
        `'${field}' is too large: ${ctx.limit?.tokens ?? 'more'}. This model's maximum context length is ${maxModelLen} tokens and your request has ${promptTokens} input tokens (${ctx.limit?.tokens ?? 'more'} > ${maxModelLen} - ${promptTokens}).`,
        field,
        'context_length_exceeded',
      );
    }
    case 'injected_failure':
      return serverError(
        'the engine failed the request (injected by --fail-rate)',
        'injected_failure',
      );
    case 'shutting_down':
      return new OpenAiError(503, 'the engine is shutting down', null, 'shutting_down');
    case 'choices_unsupported':
      // V0 forks one sequence group after a shared prefill; this model has no such group.
      return invalidRequest(
        `n: expected 1 under this engine version (the simulated engine serves several choices as vLLM V1 does: --engine-version vllm-v1), got ${ctx.choices ?? 'more'}`,
        'n',
      );
  }
}
