/**
 * The one place a refusal becomes an HTTP response: OpenAI's error body with a machine-readable
 * `code` (the closed-enum reason, or OpenAI's own name for it: `wireCode`), the status chosen where it was decided, `Retry-After` in
 * whole seconds (rounded up, never 0) for 429 and 503 when a retry can succeed, and
 * `x-goodput-reason`. A refusal no retry can undo — its deadline out of reach (504
 * `deadline_exceeded`: passed, or nearer than admission's margin), or out of reach by the time
 * a Retry-After would send it back (a final 503) — carries no Retry-After but
 * `x-should-retry: false`, which the OpenAI and Anthropic SDKs obey: they would otherwise retry
 * any 5xx or 429. Nothing of the policy's internals beyond the reason and the sizes a client can
 * act on leaves; where only the request can name them (the class it asked, its prompt's field,
 * its charge), its words come with the decision (refusal-words.ts).
 */
import type { RejectReason, Rejection, ContextOverflow } from '../../core/request/decision.ts';
import type { Ms } from '../../core/request/units.ts';
import { errorBody } from '../../openai/index.ts';
import { whole, type Whole } from './answer.ts';
import { overflowWords, type Words } from './refusal-words.ts';

/** Why a request that could not be read as one was refused, from its OpenAI error's status. */
export function unreadReason(status: number): RejectReason {
  return status === 401
    ? 'unauthenticated'
    : status === 404
      ? 'unknown_model'
      : status === 413
        ? 'payload_too_large'
        : 'invalid_request';
}

const MESSAGES: Readonly<Record<RejectReason, string>> = {
  invalid_request: 'the request is not a valid one',
  unauthenticated: 'missing or invalid API key',
  payload_too_large: 'the request body is over the limit',
  not_found: 'no such route',
  method_not_allowed: 'the route does not take this method',
  unknown_tenant: 'the API key is not known to any tenant',
  class_not_granted: 'this tenant is not granted the requested class',
  unknown_model: 'the model is not served here',
  unknown_adapter: 'the adapter is not served here',
  context_length: "the prompt and requested output exceed this model's maximum context length",
  output_limit: "max_tokens exceeds the class's output budget",
  stream_not_allowed: 'streaming is not allowed for this tenant',
  duplicate: 'a request with this Idempotency-Key is already in flight',
  idempotency_key_reused:
    'this Idempotency-Key was already used for a different request; use a new key for a new request',
  deadline_exceeded: "the request's deadline has passed, or is too near for any answer",
  tenant_tokens: "the tenant's token budget for this window does not cover this request",
  tenant_requests: "the tenant's requests for this window are spent",
  tenant_gpu_time: "the tenant's GPU-time budget for this window is spent",
  tenant_concurrency: 'the tenant has too many requests in flight',
  tenant_sessions: 'the tenant has too many sessions in flight',
  root_budget: "the agent tree's budget is spent",
  retry_budget: "the tenant's retry budget is spent",
  kv_capacity: 'no replica has memory for this request now',
  deadline: 'the request cannot be served within its deadline now',
  service_capacity: 'the service is at capacity',
  no_ready_replica: 'no backend is ready to serve this request now',
  shutting_down: 'this gateway is shutting down; another replica can take the request',
  handed_over: 'this gateway drained and handed the background response to another replica',
  gateway_overloaded: 'this gateway is overloaded and sheds new requests until it catches up',
  client_closed: 'the client closed the request',
};

export function refusal(
  reason: RejectReason,
  status: number,
  retryAfterMs?: Ms,
  context?: ContextOverflow,
  final?: boolean,
  words?: Words,
): Whole {
  const headers: Record<string, string> = { 'x-goodput-reason': reason };
  // A deadline out of reach is final whoever refused it.
  const noRetry = final === true || reason === 'deadline_exceeded';
  if (noRetry) headers['x-should-retry'] = 'false';
  // Going away: the client's next request should open a connection to another replica. And a
  // gateway shedding load stops keeping connections alive (Envoy's disable_http_keepalive
  // overload action): a client must reconnect, fewer sockets are ready at once, and Node's loop
  // gets back to its timers — streams' deadlines, the shedder's own tick — between polls.
  if (reason === 'shutting_down' || reason === 'gateway_overloaded') headers.connection = 'close';
  if (retryAfterMs !== undefined && !noRetry) {
    headers['retry-after'] = String(Math.max(1, Math.ceil(retryAfterMs / 1000)));
    // The same to the millisecond, which the OpenAI and Anthropic SDKs read first: a 300 ms
    // drain is not a second's wait.
    headers['retry-after-ms'] = String(Math.max(1, Math.round(retryAfterMs)));
  }
  const told = words ?? (context === undefined ? undefined : overflowWords(context));
  const body =
    told === undefined
      ? bodyOf(reason, status)
      : JSON.stringify(
          errorBody(status, told.message, told.param ?? null, wireCode(reason, context)),
        );
  return whole(status, headers, body);
}

/** A gateway shutting down: another replica can take the request at once. */
export const SHUTTING_DOWN: Rejection = {
  outcome: 'reject',
  status: 503,
  reason: 'shutting_down',
  retryAfterMs: 1_000,
};

/** A decision's refusal as the client sees it; `words`: what only its request can say (refusal-words.ts). */
export function refusalOf(d: Rejection, words?: Words): Whole {
  const answer = refusal(d.reason, d.status, d.retryAfterMs, d.context, d.final, words);
  // Its turn is kept: a retry with its Idempotency-Key at Retry-After is expected, and admitted.
  if (d.keptTurn === true) answer.headers['x-goodput-turn'] = 'kept';
  return answer;
}

/**
 * The body's `code`: the reason, but for a prompt too long, which OpenAI (and vLLM, and
 * `goodput engine`) call `context_length_exceeded` — and the engine, when it is its KV cache
 * that cannot hold it, `kv_capacity_exceeded`. The reason (`x-goodput-reason`, the metrics'
 * label) stays the closed enum's.
 */
function wireCode(reason: RejectReason, context: ContextOverflow | undefined): string {
  if (reason !== 'context_length') return reason;
  return context?.limit === 'kv_cache' ? 'kv_capacity_exceeded' : 'context_length_exceeded';
}

/** Bodies of the refusals whose message is fixed, made once: they are the overload's answers. */
const BODIES = new Map<string, string>();

function bodyOf(reason: RejectReason, status: number): string {
  const key = `${status} ${reason}`;
  let body = BODIES.get(key);
  if (body === undefined) {
    body = JSON.stringify(errorBody(status, MESSAGES[reason], null, wireCode(reason, undefined)));
    BODIES.set(key, body);
  }
  return body;
}
