/**
 * The one place an admission refusal becomes an HTTP response: OpenAI's error body with a
 * machine-readable `code` (the closed-enum reason), the status admission chose, `Retry-After`
 * in whole seconds (rounded up, never 0) for 429 and 503, and `x-goodput-reason`. Nothing of
 * the policy's internals beyond the reason leaves.
 */
import type { RejectReason, RejectStatus } from '../../core/admission/admission.ts';
import type { Ms } from '../../core/request/units.ts';
import { OpenAiError, errorResponse } from '../../openai/index.ts';

const MESSAGES: Readonly<Record<RejectReason, string>> = {
  unknown_tenant: 'the API key is not known to any tenant',
  class_not_granted: 'this tenant is not granted the requested class',
  unknown_model: 'the model is not served here',
  unknown_adapter: 'the adapter is not served here',
  context_length: "the prompt and requested output exceed the model's context",
  output_limit: "max_tokens exceeds the class's output budget",
  stream_not_allowed: 'streaming is not allowed for this tenant',
  duplicate: 'a request with this Idempotency-Key is already in flight',
  tenant_tokens: "the tenant's token budget for this window is spent",
  tenant_gpu_time: "the tenant's GPU-time budget for this window is spent",
  tenant_concurrency: 'the tenant has too many requests in flight',
  tenant_sessions: 'the tenant has too many sessions in flight',
  root_budget: "the agent tree's budget is spent",
  retry_budget: "the tenant's retry budget is spent",
  kv_capacity: 'no replica has memory for this request now',
  deadline: 'the request cannot be served within its deadline now',
  service_capacity: 'the service is at capacity',
};

export function refusal(reason: RejectReason, status: RejectStatus, retryAfterMs?: Ms): Response {
  const headers: Record<string, string> = { 'x-goodput-reason': reason };
  if (retryAfterMs !== undefined) {
    headers['retry-after'] = String(Math.max(1, Math.ceil(retryAfterMs / 1000)));
  }
  return errorResponse(new OpenAiError(status, MESSAGES[reason], null, reason), headers);
}
