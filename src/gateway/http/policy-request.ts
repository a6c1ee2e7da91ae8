/**
 * A completion request as the policy sees it (core/request/request.ts): made from its body as
 * read and its client's headers — its prompt sized and hashed (prompt-view.ts), its output cap,
 * its class, session and deadline on the gateway's clock.
 */
import type { LlmRequest } from '../../core/request/request.ts';
import type { SloClassName } from '../../core/request/slo-classes.ts';
import type { Ms } from '../../core/request/units.ts';
import { choiceCount, outputLimit, reasoningEffortOf } from '../../openai/index.ts';
import type { ApiKind } from '../backend.ts';
import type { ClientHeaders } from './client-headers.ts';
import type { CompletionsDeps } from './completions.ts';
import { promptView } from './prompt-view.ts';
import type { ReadRequest } from './read-request.ts';

/** The request as the policy sees it. */
export function policyRequest(
  id: string,
  kind: ApiKind,
  { parsed, cacheKey }: ReadRequest,
  headers: ClientHeaders,
  tenant: string,
  cls: SloClassName,
  deps: CompletionsDeps,
  queuedSinceMs: Ms | undefined,
): LlmRequest {
  const context = deps.gateway.pipeline.spec.maxModelLen;
  const prompt = promptView(kind, parsed, context, deps.imageTokens, deps.promptScale);
  const now = deps.nowMs();
  return {
    id,
    // A client whose connection waited to be read has waited since then.
    arrivalMs: queuedSinceMs ?? now,
    inputTokens: prompt.inputTokens,
    inputTokensAtLeast: prompt.inputTokensAtLeast,
    ...(prompt.estimate === undefined ? {} : { promptEstimate: prompt.estimate }),
    outputTokens: 0,
    maxTokens: outputLimit(parsed)?.tokens,
    ...minTokensOf(parsed),
    ...(choiceCount(parsed) > 1 ? { choices: choiceCount(parsed) } : {}),
    tenant,
    sloClass: cls,
    stream: parsed.stream === true,
    model: undefined,
    // A model that names one of the served LoRA adapters asks for that adapter.
    adapter: deps.gateway.pipeline.spec.adapters.includes(parsed.model) ? parsed.model : undefined,
    attempt: headers.attempt,
    idempotencyKey: headers.idempotencyKey,
    // An agent's conversation id (its prompt_cache_key) is its session.
    session: headers.session ?? cacheKey,
    prefix: prompt.prefix,
    deadlineMs: clientDeadline(headers, now, deps),
    reasoningEffort: 'messages' in parsed ? reasoningEffortOf(parsed) : undefined,
  };
}

/** What it generates at the least: vLLM's `min_tokens`, or its whole cap under `ignore_eos`. */
function minTokensOf(parsed: ReadRequest['parsed']): { minTokens?: number } {
  if (parsed.ignore_eos === true) return { minTokens: outputLimit(parsed)?.tokens ?? Infinity };
  const min = parsed.min_tokens;
  return typeof min === 'number' && min > 0 ? { minTokens: min } : {};
}

/** The client's deadline on the gateway's clock (its headers give it in Unix ms). */
export function clientDeadline(
  headers: ClientHeaders,
  nowMs: Ms,
  deps: CompletionsDeps,
): Ms | undefined {
  const epochMs = headers.deadlineEpochMs;
  return epochMs === undefined ? undefined : nowMs + (epochMs - deps.epochMs());
}
