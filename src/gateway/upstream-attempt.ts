/**
 * One upstream attempt's edges: the body as admission decided to serve it, and how a failed
 * attempt is named in its trace (a closed outcome and cause, the upstream's status).
 */
import type { Ms } from '../core/request/units.ts';
import type { LlmRequest } from '../core/request/request.ts';
import type { ServiceTier } from '../core/request/slo-classes.ts';
import { servedTier } from '../openai/index.ts';
import type { Ticket } from '../core/queueing/ticket.ts';
import { isUpstreamError, type ApiKind, type UpstreamCall, type UpstreamError } from './backend.ts';
import type { StopCause } from './stop.ts';
import type { AttemptOutcome } from './tracing/request-trace.ts';

/** How an attempt failed, as its trace says it: a closed outcome and cause, the upstream's status. */
export function attemptFailure(
  e: unknown,
  stop: StopCause | undefined,
): [AttemptOutcome, string, number | undefined] {
  if (stop !== undefined) return ['stopped', stop, undefined];
  if (!isUpstreamError(e)) return ['failed', 'internal_error', undefined];
  return e.requestAtFault
    ? ['rejected', 'upstream_rejected', e.status]
    : ['failed', 'upstream_error', e.status];
}

/**
 * Whether a request whose attempt failed with `e` is tried again, where `retry` allows another
 * attempt: the backend failed before the first token, or it lacks the adapter its `/v1/models`
 * listed (a 404: another that loads it may serve it).
 */
export function triedAgain(e: UpstreamError, req: LlmRequest, retry: boolean): boolean {
  if (!retry) return false;
  if (e.status === 404 && req.adapter !== undefined) return true;
  return !e.requestAtFault && e.beforeFirstToken;
}

/**
 * The body as admission decided to serve it: a degraded output cap goes upstream, and a
 * `min_tokens` above it comes down with it (vLLM refuses min_tokens > max_tokens); with engines
 * under priority scheduling, the request's `priority` (its class's band, as the simulator's
 * engines get it).
 */
export function servedBody(
  body: Record<string, unknown>,
  served: LlmRequest,
  priority?: number,
): Record<string, unknown> {
  const prioritised = priority === undefined ? body : { ...body, priority };
  const cap = served.maxTokens;
  if (cap === undefined) return prioritised;
  const { max_completion_tokens: _asked, ...rest } = prioritised;
  const min = typeof body.min_tokens === 'number' ? Math.min(body.min_tokens, cap) : undefined;
  return { ...rest, max_tokens: cap, ...(min === undefined ? {} : { min_tokens: min }) };
}

/** The call a dispatched ticket makes of its backend: a staged prompt's pieces with it. */
export function upstreamCall(
  ticket: Ticket<unknown>,
  kind: ApiKind,
  body: Record<string, unknown>,
  signal: AbortSignal,
): UpstreamCall {
  const id = ticket.req.id;
  // The client's tier (one of SERVICE_TIERS: the body was validated at the door) is the
  // gateway's to read, and its answer's to name: no backend reads it. Most bodies name none,
  // and go as they are.
  const tier = body.service_tier as ServiceTier | null | undefined;
  let call: UpstreamCall = { id, kind, body, signal };
  if (tier != null) {
    const { service_tier: _, ...sent } = body;
    call = { id, kind, body: sent, signal, serviceTier: servedTier(tier) };
  }
  const pieceTokens = ticket.entry?.pieceTokens;
  if (pieceTokens === undefined) return call;
  const planned = ticket.req.inputTokens;
  // Pieces are cut where the estimate reaches each cut (staged-pieces.ts): the plan's tokens as
  // so many of the estimate's, where the plan scaled it (prompt-scale.ts).
  const estimated = ticket.req.promptEstimate?.tokens ?? planned;
  const each = estimated / planned;
  const staged = {
    pieceTokens: each === 1 ? pieceTokens : Math.max(1, Math.round(pieceTokens * each)),
    cachedTokens: each === 1 ? ticket.hitTokens : Math.floor(ticket.hitTokens * each),
    promptTokens: estimated,
  };
  return { ...call, staged };
}

/** How long a backend may send nothing before a stopped attempt counts against it, at least. */
export const SILENT_MIN_MS: Ms = 1_000;
/** Without a prediction to go by (a policy that assesses nothing): a generous fixed limit. */
export const SILENT_UNPREDICTED_MS: Ms = 30_000;

/**
 * How long after its dispatch an attempt may go without a token before its silence is its
 * backend's fault: ten times the time to first token predicted once it was dispatched (the
 * prediction less its queue wait), at least `SILENT_MIN_MS` — a long prompt's prefill included,
 * and a backend busier than planned for not taken out on the first wait.
 */
export function silentLimitMs(ticket: Ticket<unknown>): Ms {
  const decision = ticket.decision;
  const a = decision.outcome === 'admit' ? decision.assessment : undefined;
  if (a === undefined) return SILENT_UNPREDICTED_MS;
  return Math.max(SILENT_MIN_MS, 10 * Math.max(0, a.predictedTtftMs - a.waitMs));
}
