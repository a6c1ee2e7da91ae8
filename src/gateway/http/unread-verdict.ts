/**
 * What the queue alone says of a request before its body is read (`Pipeline.refusedForQueue`):
 * under a standing overload most refusals, each at the cost of its headers. Its prompt is
 * bounded by its `Content-Length`, and its class is the one its headers ask for — or, where the
 * policy maps service tiers to classes (service-tier.ts), any its body could name.
 */
import type { Rejection } from '../../core/request/decision.ts';
import type { SloClassName } from '../../core/request/slo-classes.ts';
import type { Endpoint } from '../backend.ts';
import type { CompletionsDeps } from './completions.ts';
import type { Inbound } from './inbound.ts';

/**
 * What the queue alone says of a request that may be served in any of `classes`, the first the
 * class its headers ask for and the rest those its body's `service_tier` could name: `refusal`,
 * the earliest retry of them all, when it rules out every one; else `untiered`, its refusal of
 * the first, when it rules that one out — which stands once the body is read and names no tier.
 */
export function queueVerdict(
  classes: readonly SloClassName[],
  tenant: string,
  kind: Endpoint,
  inbound: Inbound,
  deps: CompletionsDeps,
): { readonly refusal?: Rejection; readonly untiered?: Rejection } {
  const atMost = promptTokensAtMost(kind, inbound, deps);
  const asked = deps.gateway.refusedForQueue(classes[0], tenant, atMost);
  if (asked === undefined) return {};
  let first = asked;
  for (const cls of classes.slice(1)) {
    const r = deps.gateway.refusedForQueue(cls, tenant, atMost);
    if (r === undefined) return { untiered: asked };
    if ((r.retryAfterMs ?? Infinity) < (first.retryAfterMs ?? Infinity)) first = r;
  }
  return { refusal: first };
}

/**
 * The most prompt tokens a body of the declared length can carry, by the estimate the gateway
 * sizes prompts with (../../openai/prompt-tokens.ts): no character weighs more tokens than its
 * UTF-8 bytes (¼ a Latin one, 0.8 a Chinese one of 3 bytes, 3 an emoji of 4), a token id at least
 * 2 bytes (`1,`), a message's 4 tokens of template overhead far more than 4 bytes of JSON — so
 * no more tokens than bytes, or than a text estimated at as many is planned as (its backends'
 * counts can scale it up: ../../core/estimate/prompt-scale.ts). Unknown (a chunked upload, or a Responses request,
 * which may follow a stored conversation of any length): any number.
 */
function promptTokensAtMost(kind: Endpoint, inbound: Inbound, deps: CompletionsDeps): number {
  if (kind === 'responses' && deps.keepResponses) return Infinity;
  const declared = inbound.header('content-length');
  const bytes = declared === null ? NaN : Number(declared);
  if (!Number.isSafeInteger(bytes) || bytes < 0) return Infinity;
  return Math.max(bytes, deps.promptScale?.mostTokens(bytes) ?? 0);
}
